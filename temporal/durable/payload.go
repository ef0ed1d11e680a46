package durable

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// What one payload may carry. Temporal refuses a payload past 2 MB
// (limit.blobSize.error): an activity's input past it fails the workflow
// task that schedules it, again at every retry, so the run never lands;
// a result past it fails its activity. The run keeps within these bounds
// instead, with room for the payload's encoding and a codec's.
const (
	// MaxToolOutputBytes bounds a tool's output as the run carries it: a
	// worker cuts a longer one, and the model reads where it was cut.
	MaxToolOutputBytes = 256 << 10

	// MaxRequestBytes bounds a model attempt's input: past it, the oldest
	// tool outputs, then the oldest answers, are left out of the request
	// (never out of the run's own conversation), each saying so.
	MaxRequestBytes = 1536 << 10
)

// cutOutput is out within MaxToolOutputBytes: out itself when it fits,
// else a JSON string of its start and a line that says how much was cut.
func cutOutput(out json.RawMessage) json.RawMessage {
	if len(out) <= MaxToolOutputBytes {
		return out
	}
	keep := MaxToolOutputBytes - 512 // the line that says so, and the string's escapes, in the rest
	for keep > 0 && !utf8.RuneStart(out[keep]) {
		keep--
	}
	s := fmt.Sprintf("%s\n[output cut at %d of its %d bytes: a durable run carries at most %d bytes of one tool's output]",
		out[:keep], keep, len(out), MaxToolOutputBytes)
	b, err := json.Marshal(s)
	if err != nil || len(b) > MaxToolOutputBytes { // escapes doubled it: keep the line alone
		b, _ = json.Marshal(fmt.Sprintf("[output of %d bytes left out: a durable run carries at most %d bytes of one tool's output]", len(out), MaxToolOutputBytes))
	}
	return b
}

// fitted is msgs, the run's own copy for one request, within
// MaxRequestBytes: the oldest tool outputs, then the oldest answers, are
// replaced by a line that says they were left out, until the rest fits.
// It reports whether they fit; a conversation of only its prompts and
// notes always does (Workflow refuses a larger task).
func fitted(msgs []Message) bool {
	sizes := make([]int, len(msgs))
	total := 0
	for i, m := range msgs {
		sizes[i] = encodedLen(m)
		total += sizes[i]
	}
	for _, role := range []string{"tool", "assistant"} {
		for i := range msgs {
			if total <= MaxRequestBytes {
				return true
			}
			if msgs[i].Role != role || msgs[i].Content == "" {
				continue
			}
			msgs[i].Content = fmt.Sprintf("[%d bytes left out: the conversation passed the %d bytes a durable run's request carries]",
				len(msgs[i].Content), MaxRequestBytes)
			n := encodedLen(msgs[i])
			total += n - sizes[i]
			sizes[i] = n
		}
	}
	return total <= MaxRequestBytes
}

// encodedLen is m's size as an activity's input encodes it.
func encodedLen(m Message) int {
	b, err := json.Marshal(m)
	if err != nil { // a Message is plain data: this is a bug
		panic(err)
	}
	return len(b)
}
