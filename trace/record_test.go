package trace_test

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/glidepath/glidepath/trace"
)

var ts = time.Date(2025, 3, 14, 15, 9, 26, 535897932, time.UTC)

// everyKind is one record of every event, with the fields it carries.
var everyKind = []trace.Record{
	{Event: trace.RunStart, TotalMs: 120000, Message: "find the supplier"},
	{Event: trace.RunStart, ParentRunID: "run-0", Key: "gp_research", TotalMs: 30000},
	{Event: trace.AttemptStart, ParentRunID: "run-0", Step: "tool:search", StepIndex: 1, Attempt: 1, GrantedMs: 2000, Key: "gp_s"},
	{Event: trace.PhaseChange, From: "explore", To: "narrow"},
	{Event: trace.AttemptStart, Step: "model", StepIndex: 1, Attempt: 1, GrantedMs: 60000},
	{Event: trace.AttemptEnd, Step: "model", StepIndex: 1, Attempt: 1, GrantedMs: 60000, Outcome: trace.OK, Status: 200, Keepalives: 3, Chunks: 41, Tokens: 812,
		InputTokens: 700, OutputTokens: 112, CachedTokens: 512, ReasoningTokens: 64, FinishReason: "tool_calls", ResponseModel: "gpt-4.1-2025-04-14"},
	{Event: trace.AttemptEnd, Step: "model", StepIndex: 2, Attempt: 1, GrantedMs: 30000, Outcome: trace.OK, Chunks: 20, Tokens: 760,
		InputTokens: 744, OutputTokens: 16, FinishReason: "length"},
	{Event: trace.AttemptStart, Step: "tool:search", StepIndex: 2, Attempt: 1, GrantedMs: 30000, Key: "gp_7Hq", CallID: "call_abc"},
	{Event: trace.AttemptStart, Step: "tool:search", StepIndex: 2, Attempt: 2, GrantedMs: 30000, ResendCount: 1, Key: "gp_7Hq"},
	{Event: trace.AttemptEnd, Step: "tool:search", StepIndex: 2, Attempt: 2, GrantedMs: 30000, ResendCount: 1, Key: "gp_7Hq", Outcome: trace.UpstreamError, Status: 503, Message: "bad gateway"},
	{Event: trace.Refused, Step: "agent:review", StepIndex: 3, Attempt: 1, Reason: "below_p50"},
	{Event: trace.Backoff, Step: "tool:search", StepIndex: 2, SleepMs: 412, Source: "jitter"},
	{Event: trace.Backoff, Step: "model", StepIndex: 1, SleepMs: 180, Source: "jitter", RetryAfterInvalid: "soon-ish"},
	{Event: trace.Backoff, SleepMs: 90000, Source: "retry_after", GaveUp: true, Reason: "retry_after_exceeds_budget"},
	{Event: trace.Backoff, Step: "tool:pay", StepIndex: 2, Attempt: 3, Key: "gp_pay", SleepMs: 500, Source: "jitter", Reconciling: true},
	{Event: trace.Progress, Step: "tool:search", Key: "gp_7Hq", Units: 3, Total: 10, Message: "page 3"},
	{Event: trace.CancelSent, Step: "tool:pay", Key: "gp_pay", State: "accepted"},
	{Event: trace.Reconcile, Step: "tool:pay", Key: "gp_pay", State: "never_received"},
	{Event: trace.Orphan, Step: "tool:pay", Key: "gp_pay", State: "open"},
	{Event: trace.Landing, Cause: "budget", Result: "harness"},
	{Event: trace.RunEnd, TotalMs: 120000, Cause: "budget", Result: "partial"},
}

// stamp fills what a Recorder fills, as one would.
func stamp(r trace.Record, seq int64) trace.Record {
	r.TS = ts.Add(time.Duration(seq) * time.Millisecond)
	r.RunID = "run-1"
	r.Seq = seq
	r.ElapsedMs = 1000 * seq
	r.RemainingMs = 120000 - 1000*seq
	r.Phase = "explore"
	return r
}

func TestEveryKindOfRecordReadsBackAsItWasWritten(t *testing.T) {
	for i, r := range everyKind {
		want := stamp(r, int64(i+1))
		t.Run(string(r.Event), func(t *testing.T) {
			line := append(trace.AppendJSON(nil, want), '\n')
			got, err := trace.ReadRecords(bytes.NewReader(line))
			if err != nil {
				t.Fatalf("ReadRecords(%s): %v", line, err)
			}
			if len(got) != 1 || got[0] != want {
				t.Errorf("read back\n%+v\nwant\n%+v\nfrom %s", got, want, line)
			}
			if !json.Valid(line) {
				t.Errorf("not valid JSON: %s", line)
			}
		})
	}
}

func TestATraceOfEveryKindReadsBackInOrder(t *testing.T) {
	var buf []byte
	var want []trace.Record
	for i, r := range everyKind {
		r = stamp(r, int64(i+1))
		want = append(want, r)
		buf = append(trace.AppendJSON(buf, r), '\n')
	}
	got, err := trace.ReadRecords(bytes.NewReader(buf))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("read back\n%+v\nwant\n%+v", got, want)
	}
}

func TestTheTimestampIsRFC3339WithNanosecondsInUTC(t *testing.T) {
	cases := []struct {
		ts   time.Time
		want string
	}{
		{ts, "2025-03-14T15:09:26.535897932Z"},
		{time.Date(2025, 3, 14, 15, 9, 26, 0, time.UTC), "2025-03-14T15:09:26.000000000Z"},
		{time.Date(2025, 3, 14, 16, 9, 26, 1, time.FixedZone("CET", 3600)), "2025-03-14T15:09:26.000000001Z"},
	}
	for _, tc := range cases {
		t.Run(tc.want, func(t *testing.T) {
			line := trace.AppendJSON(nil, trace.Record{TS: tc.ts, Event: trace.Landing})
			if want := `{"ts":"` + tc.want + `",`; !bytes.HasPrefix(line, []byte(want)) {
				t.Errorf("got %s, want it to start %s", line, want)
			}
			if _, err := time.Parse(time.RFC3339Nano, tc.want); err != nil {
				t.Error(err)
			}
		})
	}
}

// Fields a record of each event carries even when they are zero: every
// record's seven, the attempt records' five, and those that make an event
// what it is. Anything else zero is left out.
func TestZeroFieldsAreLeftOutExceptTheOnesAnEventRequires(t *testing.T) {
	every := []string{"ts", "run_id", "seq", "event", "elapsed_ms", "remaining_ms", "phase"}
	attempt := []string{"step", "step_index", "attempt", "granted_ms", "resend_count"}
	cases := []struct {
		event  trace.Event
		gaveUp bool
		want   []string
	}{
		{trace.RunStart, false, []string{"total_ms"}},
		{trace.PhaseChange, false, []string{"from", "to"}},
		{trace.AttemptStart, false, attempt},
		{trace.AttemptEnd, false, append([]string{"outcome", "keepalives"}, attempt...)},
		{trace.Refused, false, attempt},
		{trace.Backoff, false, []string{"sleep_ms", "source"}},
		{trace.Backoff, true, []string{"sleep_ms", "source", "gave_up"}},
		{trace.Progress, false, []string{"units"}},
		{trace.CancelSent, false, []string{"state"}},
		{trace.Reconcile, false, []string{"state"}},
		{trace.Orphan, false, []string{"state"}},
		{trace.Landing, false, nil},
		{trace.RunEnd, false, []string{"total_ms", "result"}},
	}
	for _, tc := range cases {
		name := string(tc.event)
		if tc.gaveUp {
			name += " gave up"
		}
		t.Run(name, func(t *testing.T) {
			line := trace.AppendJSON(nil, trace.Record{Event: tc.event, GaveUp: tc.gaveUp})
			var m map[string]any
			if err := json.Unmarshal(line, &m); err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			got := slices.Sorted(maps.Keys(m))
			want := slices.Sorted(slices.Values(append(slices.Clone(every), tc.want...)))
			if !slices.Equal(got, want) {
				t.Errorf("fields %v, want %v\n%s", got, want, line)
			}
		})
	}
}

// trickyStrings are strings an escaper gets wrong: JSON's own
// metacharacters, every control character, invalid UTF-8, the separators
// JavaScript does not allow in strings, and characters encoding/json
// escapes only for HTML.
var trickyStrings = []string{
	"",
	"plain ascii",
	`"quoted"`,
	`back\slash`,
	`\"`,
	"\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f",
	"\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f",
	"\x7f DEL",
	"line\nbreak\r\n\ttab\bbell\fform",
	"<script>&amp;</script>",
	"\xff",
	"a\xc3",
	"\xc3\x28",
	"\xed\xa0\x80 a surrogate",
	"\xf4\x90\x80\x80 past U+10FFFF",
	"\xe2\x82 cut short",
	"ok \u2028 line separator \u2029 paragraph separator",
	"\ufffd already replaced",
	"café ☕ 𝄞 🙂",
	strings.Repeat("long ", 200),
}

// stdJSON is s as encoding/json writes it without HTML escaping.
func stdJSON(t testing.TB, s string) string {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func TestStringsAreEscapedExactlyAsEncodingJSONEscapesThem(t *testing.T) {
	for _, s := range trickyStrings {
		t.Run("", func(t *testing.T) { checkString(t, s) })
	}
}

// checkString checks that s, as a record's run ID and phase, encodes byte
// for byte as encoding/json encodes it and decodes to what encoding/json
// decodes from its own encoding.
func checkString(t *testing.T, s string) {
	want := stdJSON(t, s)
	line := trace.AppendJSON(nil, trace.Record{Event: trace.Landing, RunID: s, Phase: s})
	if !bytes.Contains(line, []byte(`,"run_id":`+want+`,`)) {
		t.Errorf("run_id %q encoded as\n%s\nwant it to hold\n%s", s, line, `"run_id":`+want)
	}
	if !bytes.HasSuffix(line, []byte(`,"phase":`+want+`}`)) {
		t.Errorf("phase %q encoded as\n%s\nwant it to end\n%s", s, line, `"phase":`+want+`}`)
	}
	var wantDecoded string
	if err := json.Unmarshal([]byte(want), &wantDecoded); err != nil {
		t.Fatal(err)
	}
	var got struct {
		RunID string `json:"run_id"`
		Phase string `json:"phase"`
	}
	if err := json.Unmarshal(line, &got); err != nil {
		t.Fatalf("%q encoded as invalid JSON %s: %v", s, line, err)
	}
	if got.RunID != wantDecoded || got.Phase != wantDecoded {
		t.Errorf("%q decodes as %q and %q, want %q", s, got.RunID, got.Phase, wantDecoded)
	}
	if bytes.ContainsAny(line, "\n\r\u2028\u2029") {
		t.Errorf("%q encoded with a line break inside: %q", s, line)
	}
}

func FuzzAppendJSON(f *testing.F) {
	for _, s := range trickyStrings {
		f.Add(s)
	}
	f.Fuzz(checkString)
}
