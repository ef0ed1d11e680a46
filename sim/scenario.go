package sim

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"time"
)

// Forever, as [Rule.Keepalive], sends keepalive comments until the client
// leaves. It is the largest Duration, so the keepalive loop needs no special
// case: it simply never reaches its end.
const Forever time.Duration = math.MaxInt64

// DefaultKeepaliveEvery is the gap between keepalive comments when a rule
// sets [Rule.Keepalive] but leaves [Rule.KeepaliveEvery] zero.
const DefaultKeepaliveEvery = time.Second

// ErrScenario is matched by every [*ScenarioError].
var ErrScenario = errors.New("sim: bad scenario")

// A Scenario scripts faults into a server's answers. A nil or zero Scenario
// is the default policy alone. A Scenario is never modified by a server, so
// one value can drive many servers; each server counts requests and rule
// uses on its own.
type Scenario struct {
	// Seed varies the ids and generated strings of the answers. The same
	// seed and conversation always give the same answer.
	Seed int64

	// Rules are tried in order for each model request (a chat completion
	// or a response); the first that matches shapes the response. A
	// request no rule matches gets the default policy with no fault.
	Rules []Rule
}

// A Rule matches model requests (chat completions and responses) and
// shapes their responses. A zero field adds nothing: a Rule with only
// Request set serves that request normally (and keeps later rules from
// seeing it). The fields that match
// (Request, Turn, Times, After and For) combine: a request must meet every
// one that is set.
//
// The response follows this timeline; a field shapes its step only:
//
//	arrival → Delay → [Status error | Hang] → headers → Keepalive period
//	        → [Hang] → FirstToken → chunk → ChunkGap → chunk … → data: [DONE]
//
// A non-streaming request spends the same time silently before its headers:
// Delay, the keepalive period, then FirstToken plus ChunkGap between each
// pair of the chunks the stream would have carried. On /v1/responses the
// chunks are the API's events, and the first three (response.created,
// response.in_progress, the reasoning item's response.output_item.added)
// come with the headers, before FirstToken: a reasoning model's silence.
type Rule struct {
	// Request matches the n-th model request the server receives,
	// counting from 1 (0 matches any).
	Request int
	// Turn matches requests whose conversation holds Turn−1 assistant
	// messages (0 matches any).
	Turn int
	// Times is how many requests the rule applies to before it is used
	// up (0: no limit).
	Times int
	// After and For match requests by when they arrive: a rule with
	// either set matches only requests arriving in [After, After+For)
	// (For 0: no end). Arrival is measured from the arrival of the
	// server's first model request (the one Request 1 matches),
	// not from when the server started, so a fleet that starts together
	// sees the window open with its first call however long the server
	// sat idle before; [Request.At] is what they match. A scenario file
	// may not say "for: 0s", a window that holds nothing.
	After time.Duration
	For   time.Duration

	// Delay is waited before anything is sent, headers included.
	Delay time.Duration
	// Keepalive is how long a stream sends only ": keepalive" comments,
	// one every KeepaliveEvery, after its headers; [Forever] keeps it up
	// until the client leaves.
	Keepalive time.Duration
	// KeepaliveEvery is the gap between keepalive comments
	// (default [DefaultKeepaliveEvery]); it needs Keepalive.
	KeepaliveEvery time.Duration
	// Hang stops the response until the client leaves or the server
	// closes: before the headers, or after the keepalive period if there
	// is one.
	Hang bool
	// FirstToken is waited between the headers (or the end of the
	// keepalive period) and the first data chunk.
	FirstToken time.Duration
	// ChunkGap is waited between data chunks.
	ChunkGap time.Duration
	// HangAfterChunks, if set, stops the stream after that many data
	// chunks, before the next one, until the client leaves. A
	// non-streaming response stops after its headers and half of its
	// body.
	HangAfterChunks *int
	// CloseAfterChunks, if set, closes the connection after that many data
	// chunks, without a finish_reason chunk or data: [DONE] if it comes
	// before them. A non-streaming response is cut after its headers and
	// half of its body.
	CloseAfterChunks *int

	// Status, if 400–599, answers with that error in OpenAI's shape after
	// Delay. 0 and 200 mean a normal answer.
	Status int
	// Message replaces the error message of a Status error.
	Message string
	// RetryAfter is sent verbatim as the Retry-After header of a Status
	// error, so malformed values can be tested too.
	RetryAfter string
	// RetryAfterMs is sent verbatim as the retry-after-ms header of a
	// Status error.
	RetryAfterMs string

	// ToolCalls and Answer, if either is set, replace the default
	// policy's reply: the assistant says Answer (possibly empty) and makes
	// these calls (possibly none).
	ToolCalls []ToolCall
	Answer    string
	// Usage, if set, forces the usage report on or off: in a stream, the
	// final chunk with empty choices whatever stream_options asked; in a
	// non-streaming answer, the usage field. A response always has its
	// usage unless Usage is false.
	Usage *bool
	// CachedTokens and ReasoningTokens, if set, are reported in the
	// usage: CachedTokens of the input tokens as read from the provider's
	// cache (at most all of them), ReasoningTokens as thought before the
	// reply and counted in the output (on the Responses API in place of
	// its reasoning summary's own count). Under an output-token limit
	// the reasoning is spent first (see Limits in the package doc).
	CachedTokens    int
	ReasoningTokens int

	// StreamError and Failed, if set, make a /v1/responses answer fail
	// in its stream, with that error code (e.g. "rate_limit_exceeded",
	// "server_error"), where its output would have begun: after the
	// opening events and FirstToken, an "error" event (StreamError) or
	// a "response.failed" event (Failed), and then the stream ends. A
	// non-streaming answer fails, after the same time, with the status
	// the code stands for (429, 500, 503 or 400). Chat Completions
	// answers are not changed by them.
	StreamError string
	Failed      string
}

// A ToolCall is one function call in an assistant message.
type ToolCall struct {
	// ID is the call's id; empty in a [Rule] means a deterministic one.
	ID string
	// Name is the function's name.
	Name string
	// Arguments is the JSON text of the arguments, sent verbatim (so
	// invalid JSON can be tested); empty in a [Rule] means "{}".
	Arguments string
}

// ScenarioError reports an invalid scenario: the field, and the line of the
// scenario file when it came from one. It matches [ErrScenario].
type ScenarioError struct {
	File  string // the file, when read by [LoadScenario]
	Line  int    // 1-based line in the file; 0 when unknown
	Field string // e.g. "rules[1].delay"; empty for the document as a whole
	Err   error  // what is wrong
}

func (e *ScenarioError) Error() string {
	var b strings.Builder
	b.WriteString("sim: ")
	switch {
	case e.File != "" && e.Line > 0:
		fmt.Fprintf(&b, "%s:%d: ", e.File, e.Line)
	case e.File != "":
		fmt.Fprintf(&b, "%s: ", e.File)
	case e.Line > 0:
		fmt.Fprintf(&b, "scenario line %d: ", e.Line)
	default:
		b.WriteString("scenario: ")
	}
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Err.Error())
	return b.String()
}

func (e *ScenarioError) Unwrap() error { return e.Err }

// Is reports whether target is [ErrScenario].
func (e *ScenarioError) Is(target error) bool { return target == ErrScenario }

// LoadScenario reads and parses a scenario file (YAML, or JSON). Its errors
// name the file.
func LoadScenario(path string) (*Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	sc, err := ParseScenario(data)
	if e, ok := errors.AsType[*ScenarioError](err); ok {
		e.File = path
	}
	return sc, err
}

// Validate reports the first problem of a scenario built in Go as a
// [*ScenarioError] (with no line). A nil Scenario is valid. Scenarios from
// [ParseScenario] are always valid.
func (sc *Scenario) Validate() error {
	if sc == nil {
		return nil
	}
	for i := range sc.Rules {
		if err := sc.Rules[i].check(fmt.Sprintf("rules[%d].", i), nil); err != nil {
			return err
		}
	}
	return nil
}

// check validates ranges and conflicts. line gives a field's line (nil:
// none known); fields are named by their scenario-file keys.
func (r *Rule) check(prefix string, line map[string]int) error {
	fail := func(field string, format string, args ...any) error {
		return &ScenarioError{Line: line[field], Field: prefix + field, Err: fmt.Errorf(format, args...)}
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"request", r.Request}, {"turn", r.Turn}, {"times", r.Times}, {"cached_tokens", r.CachedTokens}, {"reasoning_tokens", r.ReasoningTokens}} {
		if f.v < 0 {
			return fail(f.name, "must not be negative, got %d", f.v)
		}
	}
	for _, f := range []struct {
		name string
		v    time.Duration
	}{
		{"after", r.After}, {"for", r.For},
		{"delay", r.Delay}, {"keepalive", r.Keepalive}, {"keepalive_every", r.KeepaliveEvery},
		{"first_token", r.FirstToken}, {"chunk_gap", r.ChunkGap},
	} {
		if f.v < 0 {
			return fail(f.name, "bad duration %v: must not be negative", f.v)
		}
	}
	for _, f := range []struct {
		name string
		v    *int
	}{{"hang_after_chunks", r.HangAfterChunks}, {"close_after_chunks", r.CloseAfterChunks}} {
		if f.v != nil && *f.v < 0 {
			return fail(f.name, "must not be negative, got %d", *f.v)
		}
	}
	if r.Status != 0 && r.Status != 200 && (r.Status < 400 || r.Status > 599) {
		return fail("status", "bad status %d: want 200 or an error status 400-599", r.Status)
	}
	for _, f := range []struct{ name, v string }{{"retry_after", r.RetryAfter}, {"retry_after_ms", r.RetryAfterMs}} {
		if strings.ContainsFunc(f.v, isCTL) {
			return fail(f.name, "%q is not a valid header value", f.v)
		}
	}
	for i, c := range r.ToolCalls {
		if c.Name == "" {
			return fail("tool_calls", "tool_calls[%d] has no name", i)
		}
	}

	// The fields after a step that never ends, or after an error status,
	// could never take effect; naming them is kinder than ignoring them.
	set := map[string]bool{
		"keepalive":          r.Keepalive != 0,
		"keepalive_every":    r.KeepaliveEvery != 0,
		"hang":               r.Hang,
		"first_token":        r.FirstToken != 0,
		"chunk_gap":          r.ChunkGap != 0,
		"hang_after_chunks":  r.HangAfterChunks != nil,
		"close_after_chunks": r.CloseAfterChunks != nil,
		"tool_calls":         len(r.ToolCalls) > 0,
		"answer":             r.Answer != "",
		"usage":              r.Usage != nil,
		"cached_tokens":      r.CachedTokens != 0,
		"reasoning_tokens":   r.ReasoningTokens != 0,
		"stream_error":       r.StreamError != "",
		"failed":             r.Failed != "",
		"message":            r.Message != "",
		"retry_after":        r.RetryAfter != "",
		"retry_after_ms":     r.RetryAfterMs != "",
	}
	answerFields := []string{"first_token", "chunk_gap", "hang_after_chunks", "close_after_chunks", "tool_calls", "answer", "usage", "cached_tokens", "reasoning_tokens", "stream_error", "failed"}
	if r.Status >= 400 {
		for _, f := range append([]string{"keepalive", "keepalive_every", "hang"}, answerFields...) {
			if set[f] {
				return fail(f, "conflicts with status %d: an error response carries no completion", r.Status)
			}
		}
	} else {
		for _, f := range []string{"message", "retry_after", "retry_after_ms"} {
			if set[f] {
				return fail(f, "needs an error status (400-599)")
			}
		}
	}
	if set["keepalive_every"] && !set["keepalive"] {
		return fail("keepalive_every", "needs keepalive")
	}
	if r.Keepalive == Forever {
		for _, f := range append([]string{"hang"}, answerFields...) {
			if set[f] {
				return fail(f, "conflicts with keepalive forever: the stream never gets past its keepalives")
			}
		}
	}
	if r.Hang {
		for _, f := range answerFields {
			if set[f] {
				return fail(f, "conflicts with hang: a hanging response never gets there")
			}
		}
	}
	if set["hang_after_chunks"] && set["close_after_chunks"] {
		return fail("close_after_chunks", "conflicts with hang_after_chunks")
	}
	if set["stream_error"] || set["failed"] {
		if set["stream_error"] && set["failed"] {
			return fail("failed", "conflicts with stream_error: a stream fails once")
		}
		for _, f := range []string{"tool_calls", "answer", "usage", "cached_tokens", "reasoning_tokens"} {
			if set[f] {
				return fail(f, "conflicts with a stream that fails before its output")
			}
		}
	}
	return nil
}

// inWindow reports whether a request at at (on [Request.At]'s clock) is
// inside the rule's window, [After, After+For); a rule without one has no
// bounds. It subtracts rather than adds, so After+For cannot overflow.
func (r *Rule) inWindow(at time.Duration) bool {
	return at >= r.After && (r.For == 0 || at-r.After < r.For)
}

// isCTL reports whether c may not appear in an HTTP header value (RFC 9110
// §5.5): a control character other than tab.
func isCTL(c rune) bool { return (c < ' ' && c != '\t') || c == 0x7f }
