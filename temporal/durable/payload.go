package durable

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
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

	// MaxHistoryBytes bounds a run's history before a model attempt:
	// past Temporal's limit (limit.historySize.error, 50 MB by default)
	// the server terminates the workflow, and its result is lost. A run
	// past this bound makes no more model attempts and lands, labeled.
	MaxHistoryBytes = 40 << 20

	// MaxCarryBytes bounds the input a run continues as new with, its
	// state among it (carry.go): the conversation, the trace, the calls.
	// A run whose state is past it does not continue as new; past
	// Input.ContinueAt it lands, labeled, as one past MaxHistoryBytes.
	MaxCarryBytes = 1792 << 10
)

// cutOutput is out within MaxToolOutputBytes: out itself when it fits,
// else a JSON string of its start and a line that says how much was cut.
// A string escapes some bytes to several (a quote to two, a control
// character to six), so the start is shortened until the string fits.
func cutOutput(out json.RawMessage) json.RawMessage {
	if len(out) <= MaxToolOutputBytes {
		return out
	}
	const room = 512 // for the line that says so
	for keep := MaxToolOutputBytes - room; keep > 0; {
		for keep > 0 && !utf8.RuneStart(out[keep]) {
			keep--
		}
		b := quote(fmt.Sprintf("%s\n[output cut at %d of its %d bytes: a durable run carries at most %s of one tool's output]",
			out[:keep], keep, len(out), mib(MaxToolOutputBytes)))
		if len(b) <= MaxToolOutputBytes {
			return b
		}
		keep = keep * (MaxToolOutputBytes - room) / len(b) // shrink by what the escapes cost
	}
	return quote(fmt.Sprintf("[output of %d bytes left out: a durable run carries at most %s of one tool's output]", len(out), mib(MaxToolOutputBytes)))
}

// quote is s as a JSON string, HTML left as it is.
func quote(s string) json.RawMessage {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil { // a string always encodes
		panic(err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// mib says n bytes in MiB to two decimals, KiB, or bytes, as the bounds
// are set: a measured size reads "3.27 MiB", not to the last bit.
func mib(n int) string {
	switch {
	case n >= 1<<20:
		return strings.TrimSuffix(strings.TrimRight(strconv.FormatFloat(float64(n)/(1<<20), 'f', 2, 64), "0"), ".") + " MiB"
	case n >= 1<<10:
		return strconv.Itoa(n>>10) + " KiB"
	}
	return strconv.Itoa(n) + " bytes"
}

// fitted is msgs, the run's own copy for one request, within
// MaxRequestBytes: the oldest tool outputs, then the oldest answers, are
// replaced by a line that says they were left out (an answer's output
// items with it), until the rest fits.
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
			if msgs[i].Role != role || msgs[i].Content == "" && msgs[i].Output == nil {
				continue
			}
			if msgs[i].Content != "" {
				msgs[i].Content = fmt.Sprintf("[%d bytes left out: the conversation passed the %s a durable run's request carries]",
					len(msgs[i].Content)+len(msgs[i].Output), mib(MaxRequestBytes))
			}
			// The output items an answer came in over the Responses API
			// (its reasoning, its text again) go with it: the request
			// sends its tool calls from ToolCalls instead (issue 27).
			msgs[i].Output = nil
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
