package trace_test

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/glidepath/glidepath/trace"
)

const goodLine = `{"ts":"2025-03-14T15:09:26.535897932Z","run_id":"r","seq":1,"event":"run_start","elapsed_ms":0,"remaining_ms":120000,"phase":"explore","total_ms":120000}`

// Each case's trace has one bad line: it is skipped and named, and every
// good line around it is read (issue 24: one bad line must not hide the
// rest of a trace).
func TestALineThatIsNotARecordIsSkippedAndNamedAndTheRestIsRead(t *testing.T) {
	without := func(field string) string {
		// The required fields are all followed by a comma in goodLine.
		i := strings.Index(goodLine, `"`+field+`":`)
		j := i + strings.Index(goodLine[i:], ",") + 1
		return goodLine[:i] + goodLine[j:]
	}
	cases := []struct {
		name     string
		trace    string
		wantLine int
		want     string // the line's error message, exactly
		wantRecs int
	}{
		{"not JSON", goodLine + "\nnot json\n" + goodLine + "\n", 2, "trace: line 2: not JSON: invalid character 'o' in literal null (expecting 'u')", 2},
		{"a torn last line", goodLine + "\n" + goodLine[:40], 2, "trace: line 2: cut short: the last line has no newline (its write was interrupted, or is still going on)", 1},
		{"a line cut short in the middle", goodLine + "\n" + goodLine[:40] + "\n" + goodLine + "\n", 2, "trace: line 2: not JSON: unexpected end of JSON input", 2},
		{"two objects on a line", goodLine + goodLine + "\n" + goodLine, 1, "trace: line 1: not JSON: invalid character '{' after top-level value", 1},
		{"an array", "[1,2]\n" + goodLine, 1, "trace: line 1: a JSON array, not an object", 1},
		{"a string", `"run_start"` + "\n" + goodLine, 1, "trace: line 1: a JSON string, not an object", 1},
		{"null", "null\n" + goodLine, 1, "trace: line 1: no ts", 1},
		{"a field of the wrong type", strings.Replace(goodLine, `"seq":1`, `"seq":"1"`, 1) + "\n" + goodLine, 1, "trace: line 1: seq is a JSON string, want int64", 1},
		{"a fraction where an integer belongs, on a last line without a newline", strings.Replace(goodLine, `"elapsed_ms":0`, `"elapsed_ms":0.5`, 1), 1, "trace: line 1: elapsed_ms is a JSON number 0.5, want int64", 0},
		{"a bad timestamp", strings.Replace(goodLine, `2025-03-14T`, `2025-03-14 `, 1) + "\n", 1, `trace: line 1: ts: parsing time "2025-03-14 15:09:26.535897932Z" as "2006-01-02T15:04:05Z07:00": cannot parse " 15:09:26.535897932Z" as "T"`, 0},
		{"no ts", without("ts") + "\n", 1, "trace: line 1: no ts", 0},
		{"no run_id", without("run_id") + "\n", 1, "trace: line 1: no run_id", 0},
		{"no seq", without("seq") + "\n", 1, "trace: line 1: no seq", 0},
		{"no event", without("event") + "\n", 1, "trace: line 1: no event", 0},
		{"no elapsed_ms", without("elapsed_ms") + "\n", 1, "trace: line 1: no elapsed_ms", 0},
		{"no remaining_ms", without("remaining_ms") + "\n", 1, "trace: line 1: no remaining_ms", 0},
		{"no phase", without("phase") + "\n", 1, "trace: line 1: no phase", 0},
		{"blank lines count", "\n\n" + goodLine + "\n  \n{}\n", 5, "trace: line 5: no ts", 1},
		{"a line longer than MaxLine", goodLine + "\n" + strings.Repeat(" ", trace.MaxLine+1) + "\n" + goodLine + "\n", 2, "trace: line 2: longer than 1048576 bytes", 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			recs, err := trace.ReadRecords(strings.NewReader(tc.trace))
			if len(recs) != tc.wantRecs {
				t.Errorf("got %d records beside the bad line, want %d", len(recs), tc.wantRecs)
			}
			se, ok := errors.AsType[*trace.SkippedError](err)
			if !ok || len(se.Lines) != 1 {
				t.Fatalf("ReadRecords = %v, want a *SkippedError of one line", err)
			}
			le, ok := errors.AsType[*trace.LineError](err)
			if !ok {
				t.Fatalf("ReadRecords = %v, want a *LineError in it", err)
			}
			if le.Line != tc.wantLine {
				t.Errorf("line %d, want %d", le.Line, tc.wantLine)
			}
			if got := le.Error(); got != tc.want {
				t.Errorf("error\n%s\nwant\n%s", got, tc.want)
			}
			if !errors.Is(err, trace.ErrBadRecord) {
				t.Errorf("%v does not match ErrBadRecord", err)
			}
		})
	}
}

func TestEveryBadLineIsNamedInFileOrderAndCounted(t *testing.T) {
	in := "x\n" + goodLine + "\n[1]\n" + goodLine + "\n{}\n7\n" + goodLine[:30]
	recs, err := trace.ReadRecords(strings.NewReader(in))
	if len(recs) != 2 {
		t.Errorf("got %d records, want the 2 good ones", len(recs))
	}
	se, ok := errors.AsType[*trace.SkippedError](err)
	if !ok {
		t.Fatalf("ReadRecords = %v, want a *SkippedError", err)
	}
	var lines []int
	for _, l := range se.Lines {
		lines = append(lines, l.Line)
	}
	if want := []int{1, 3, 5, 6, 7}; !slices.Equal(lines, want) {
		t.Errorf("skipped lines %v, want %v", lines, want)
	}
	want := "trace: 5 bad lines skipped: line 1: not JSON: invalid character 'x' looking for beginning of value; " +
		"line 3: a JSON array, not an object; line 5: no ts; and 2 more"
	if err.Error() != want {
		t.Errorf("error\n%s\nwant\n%s", err, want)
	}
}

func TestReadingSkipsBlankLinesAndUnknownFields(t *testing.T) {
	in := "\n" + goodLine + "\r\n\n" + strings.Replace(goodLine, `"seq":1`, `"seq":2,"future":{"x":[1]}`, 1) // CRLF and no final newline
	recs, err := trace.ReadRecords(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[0].Seq != 1 || recs[1].Seq != 2 || recs[1].TotalMs != 120000 {
		t.Errorf("got %+v", recs)
	}
}

func TestALineOfExactlyMaxLineBytesIsRead(t *testing.T) {
	line := goodLine[:len(goodLine)-1] + `,"message":"` + strings.Repeat("x", trace.MaxLine-len(goodLine)-13) + `"}`
	if len(line) != trace.MaxLine {
		t.Fatalf("test line is %d bytes, want %d", len(line), trace.MaxLine)
	}
	recs, err := trace.ReadRecords(strings.NewReader(line + "\n"))
	if err != nil || len(recs) != 1 {
		t.Fatalf("ReadRecords = %d records, %v", len(recs), err)
	}
}

func TestAReadErrorIsReturnedAsItIs(t *testing.T) {
	boom := errors.New("disk on fire")
	recs, err := trace.ReadRecords(io.MultiReader(strings.NewReader(goodLine+"\n"), iotest.ErrReader(boom)))
	if err != boom || len(recs) != 1 {
		t.Errorf("ReadRecords = %v, want %v", err, boom)
	}
}

func TestAnEmptyTraceHasNoRecords(t *testing.T) {
	recs, err := trace.ReadRecords(strings.NewReader(""))
	if err != nil || len(recs) != 0 {
		t.Errorf("ReadRecords = %v, %v", recs, err)
	}
}

// FuzzReadRecords checks that any input reads into records, with at most
// a *SkippedError naming the lines that were not, and that the records
// read encode and read back as themselves, where their timestamps in UTC
// are RFC 3339's.
func FuzzReadRecords(f *testing.F) {
	f.Add([]byte(goodLine + "\n"))
	for i, r := range everyKind {
		f.Add(append(trace.AppendJSON(nil, stamp(r, int64(i+1))), '\n'))
	}
	f.Add([]byte(`{"ts":"2025-03-14T15:09:26+02:00","run_id":"\u2028","seq":-1,"event":"x","elapsed_ms":0,"remaining_ms":0,"phase":"","gave_up":true}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		recs, err := trace.ReadRecords(bytes.NewReader(in))
		if err != nil && !errors.Is(err, trace.ErrBadRecord) {
			t.Fatalf("ReadRecords = %v, want a *SkippedError", err)
		}
		var buf []byte
		for _, r := range recs {
			if y := r.TS.UTC().Year(); y < 0 || y > 9999 {
				return // RFC 3339 has no such year: ts does not survive the trip to UTC
			}
			buf = append(trace.AppendJSON(buf, r), '\n')
		}
		again, err := trace.ReadRecords(bytes.NewReader(buf))
		if err != nil {
			t.Fatalf("re-encoded records do not read: %v\n%s", err, buf)
		}
		if len(again) != len(recs) {
			t.Fatalf("%d records read back, want %d", len(again), len(recs))
		}
		for i := range recs {
			if !again[i].TS.Equal(recs[i].TS) {
				t.Errorf("record %d: ts %v, want %v", i, again[i].TS, recs[i].TS)
			}
			again[i].TS = recs[i].TS
			if again[i] != recs[i] {
				t.Errorf("record %d read back\n%+v\nwant\n%+v", i, again[i], recs[i])
			}
		}
	})
}
