package run

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/glidepath/glidepath/internal/redact"
)

// Activity is not progress (SPEC §3, issue 27): a tool call that repeats
// a call of an earlier turn of the run — the same tool, the same
// arguments, the same result — is not a semantic event, and after
// Rules.MaxRepeats such repeats the run lands with cause stuck. The
// calls of one turn run side by side, and none of them is earlier than
// another: a call repeats only the calls of the turns before its own.
// Both hosts ask the machine, call by call, whether the quiet clock hears
// a call ([Machine.SameCall], [Machine.SameResult]), and tell it the
// calls a turn made once they have ended ([Machine.CallsMade]).

// A Made is one tool call a turn made, as the model asked for it and as
// it answered: the tool message the model reads.
type Made struct {
	Tool   string
	Args   []byte // the arguments as the model wrote them
	Result string // the tool message's content
}

// repeats is what a run remembers of its calls, for [Machine.CallsMade].
type repeats struct {
	// seen maps a call's tool and arguments to the result its latest
	// call of an earlier turn got, both as digests: the run keeps its
	// calls' fingerprints, not their texts.
	seen map[string]string
	n    int    // the repeats so far
	last string // the last repeated call, in words (callWords)
}

// SameCall reports whether a call of tool with args names the tool and
// arguments of a call of an earlier turn: its issue is then not a
// semantic event, whatever its result turns out to be. A sub-agent's
// call is a run of its own, whose events are its parent's: its issue is
// always heard.
func (m *Machine) SameCall(tool string, args []byte, agent bool) bool {
	if agent {
		return false
	}
	if m.x == nil || len(m.x.rep.seen) == 0 {
		return false // nothing to repeat, and no digest to make
	}
	_, ok := m.x.rep.seen[callDigest(tool, args)]
	return ok
}

// SameResult reports whether a call of tool with args that answered
// result got what the same call of an earlier turn got: its result is
// then not a semantic event either.
func (m *Machine) SameResult(tool string, args []byte, result string) bool {
	if m.x == nil || len(m.x.rep.seen) == 0 {
		return false // nothing to repeat, and no digest to make
	}
	got, ok := m.x.rep.seen[callDigest(tool, args)]
	return ok && got == resultDigest(result)
}

// CallsMade tells the machine the calls of a turn, once they have all
// ended: each that repeats a call of an earlier turn counts, and each is
// remembered, with its result, for the turns to come. The next
// [Machine.Step] lands the run stuck once the repeats reach
// Rules.MaxRepeats, and until then the budget note says the model is
// repeating itself ([Machine.Note]).
func (m *Machine) CallsMade(calls []Made) {
	if len(calls) == 0 {
		return
	}
	r := &m.more().rep
	if r.seen == nil {
		r.seen = make(map[string]string, len(calls))
	}
	// Each call's digests are made once, the arguments' canonical form
	// being the dear part of a step's repeat check (BenchmarkStepCPU): a
	// turn's few calls keep theirs on the stack.
	var room [8]madeDigests
	digests := room[:0]
	for _, c := range calls { // all against the earlier turns first
		d := madeDigests{call: callDigest(c.Tool, c.Args), result: resultDigest(c.Result)}
		digests = append(digests, d)
		if got, ok := r.seen[d.call]; ok && got == d.result {
			r.n++
			r.last = callWords(c.Tool, c.Args)
		}
	}
	for _, d := range digests {
		r.seen[d.call] = d.result
	}
}

// madeDigests are the fingerprints of a call a turn made: its tool and
// arguments, and its result.
type madeDigests struct{ call, result string }

// Repeats returns the run's repeated calls so far.
func (m *Machine) Repeats() int {
	if m.x == nil {
		return 0
	}
	return m.x.rep.n
}

// Note returns the budget note the model reads this turn: note, and once
// the run has repeated a call, that it is repeating itself and how many
// repeats it has left before it stops (SPEC §3: the model is told at the
// first repeat).
func (m *Machine) Note(note string) string {
	if m.Repeats() == 0 {
		return note
	}
	r := &m.x.rep
	return note + " You are repeating yourself: " + r.last + " returned the same result as before (" +
		strconv.Itoa(r.n) + plural(r.n, " repeated call", " repeated calls") + "; at " + strconv.Itoa(m.rules.MaxRepeats) +
		" the run stops). Use what you have, or do something else."
}

// stuckWords are the words of the boundary of a run that landed stuck:
// the call it repeated.
func (r *repeats) stuckWords() string {
	return r.last + " gave the same result " + strconv.Itoa(r.n) + plural(r.n, " time", " times") + " over"
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// maxArgsWords bounds the arguments a boundary or a note quotes.
const maxArgsWords = 80

// callWords names a call for a person and for the model: the tool and its
// arguments, compact, with what looks like a secret redacted, and cut
// short past maxArgsWords.
func callWords(tool string, args []byte) string {
	a := redact.Secrets(string(canonical(args)))
	if utf8.RuneCountInString(a) > maxArgsWords {
		a = string([]rune(a)[:maxArgsWords]) + "…"
	}
	return tool + " " + a
}

// canonical returns args in one form for the same arguments: JSON with
// its keys sorted and no spaces, its numbers as written (two ids past
// 2⁵³ are not taken for one); args as they are, trimmed, when they are
// not JSON; {} for none.
func canonical(args []byte) []byte {
	args = bytes.TrimSpace(args)
	if len(args) == 0 {
		return []byte("{}")
	}
	if inCanonicalForm(args) {
		return args // what decoding and encoding them would give back
	}
	return decodedCanonical(args)
}

// decodedCanonical is canonical of trimmed, non-empty args, by decoding
// them and encoding them again.
func decodedCanonical(args []byte) []byte {
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil || dec.More() {
		return args
	}
	out, err := json.Marshal(v)
	if err != nil { // what Unmarshal made always encodes: this is a bug
		return args
	}
	return out
}

// callDigest is the fingerprint of a call of tool with args.
func callDigest(tool string, args []byte) string {
	h := sha256.New()
	h.Write([]byte(tool))
	h.Write([]byte{0})
	h.Write(canonical(args))
	var sum [sha256.Size]byte
	return digestOf(h.Sum(sum[:0]))
}

// resultDigest is the fingerprint of a call's result.
func resultDigest(result string) string {
	sum := sha256.Sum256([]byte(result))
	return digestOf(sum[:])
}

// digestOf keeps 16 bytes of a SHA-256 sum, in hex: enough to tell a
// run's calls apart, and short in a carried state (State).
func digestOf(sum []byte) string {
	var text [32]byte
	hex.Encode(text[:], sum[:16])
	return string(text[:])
}
