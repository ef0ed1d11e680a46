package tools

import (
	"fmt"
	"io"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/cancel"
	"github.com/glidepath/glidepath/trace"
)

// EventKind is a kind of thing a tool call did, for the run's watchdog.
// The names are the watchdog's.
type EventKind uint8

const (
	// CallIssued: a logical call's first attempt started. Semantic.
	CallIssued EventKind = iota + 1
	// ResultReturned: a logical call that made an attempt has ended, with
	// its output or its final error. Semantic.
	ResultReturned
	// Heartbeat: a progress heartbeat whose units strictly increased for
	// its call; written "progress" in traces. Semantic.
	Heartbeat
	// StaleHeartbeat: a progress heartbeat that repeated or lowered its
	// call's units; written "stale_progress". Counted; it says nothing of
	// progress.
	StaleHeartbeat
	// Keepalive: an SSE comment. Transport only.
	Keepalive
)

var eventNames = [...]string{"", "tool_call", "tool_result", "progress", "stale_progress", "keepalive"}

// String returns the name written in traces, e.g. "tool_call".
func (k EventKind) String() string {
	if int(k) < len(eventNames) && k != 0 {
		return eventNames[k]
	}
	return fmt.Sprintf("EventKind(%d)", uint8(k))
}

// Semantic reports whether k resets a run's quiet clock (SPEC §3).
func (k EventKind) Semantic() bool { return k >= CallIssued && k <= Heartbeat }

// An Event is something a tool call did. Units, Total and Message are set
// for Heartbeat and StaleHeartbeat.
type Event struct {
	Kind    EventKind
	Tool    string
	Key     cancel.Key
	Units   int64
	Total   int64
	Message string
}

// Attempt describes one attempt of a logical call: one POST of a remote
// tool, one run of a subprocess, one call of a local function.
type Attempt struct {
	Tool       string
	Key        cancel.Key
	N          int          // 1-based; resend_count is N−1
	Lease      budget.Lease // its Granted is the Budget-Remaining-Ms sent
	Start, End time.Time
	Outcome    trace.Outcome // set at the end
	Status     int           // HTTP status of an error answer
	Err        error         // the failure, nil when OK
	Keepalives int64         // SSE comments seen
	Progress   int64         // semantic progress heartbeats seen
}

// Observer receives what calls do, for traces and the watchdog. Every field
// may be nil. Callbacks run on the goroutine that called [Registry.Call],
// except Event's, which may also run on the goroutine of a local tool
// reporting progress; they must be quick and must not call back into the
// Registry.
type Observer struct {
	AttemptStart func(Attempt)
	AttemptEnd   func(Attempt)

	// Backoff is called before each retry with the decision taken: a sleep,
	// or giving up because the sleep would outlast the budget.
	Backoff func(tool string, key cancel.Key, after int, d budget.Delay)

	// Refused is called when the budget refused the lease for attempt n.
	Refused func(tool string, n int, err error)

	// CancelSent is called after the cancel request of a call cut short,
	// with nil when the tool accepted it.
	CancelSent func(tool string, key cancel.Key, err error)

	// Reconcile is called with what reconciling a write learned.
	Reconcile func(tool string, key cancel.Key, r cancel.Resolution)

	// Orphan is called once an orphan is recorded; err is non-nil when it
	// could not be journaled (or there was no journal).
	Orphan func(e cancel.Entry, err error)

	Event func(Event)
}

func (o *Observer) attemptStart(a Attempt) {
	if o.AttemptStart != nil {
		o.AttemptStart(a)
	}
}

func (o *Observer) attemptEnd(a Attempt) {
	if o.AttemptEnd != nil {
		o.AttemptEnd(a)
	}
}

func (o *Observer) backoff(tool string, key cancel.Key, n int, d budget.Delay) {
	if o.Backoff != nil {
		o.Backoff(tool, key, n, d)
	}
}

func (o *Observer) refused(tool string, n int, err error) {
	if o.Refused != nil {
		o.Refused(tool, n, err)
	}
}

func (o *Observer) cancelSent(tool string, key cancel.Key, err error) {
	if o.CancelSent != nil {
		o.CancelSent(tool, key, err)
	}
}

func (o *Observer) reconcile(tool string, key cancel.Key, r cancel.Resolution) {
	if o.Reconcile != nil {
		o.Reconcile(tool, key, r)
	}
}

func (o *Observer) orphan(e cancel.Entry, err error) {
	if o.Orphan != nil {
		o.Orphan(e, err)
	}
}

func (o *Observer) event(e Event) {
	if o.Event != nil {
		o.Event(e)
	}
}

// commentCounter counts SSE comment lines in a stream as it is read and
// calls keepalive for each. It sits below go-sse's reader, which drops
// comments without a trace: a keepalive is transport, but a trace counts
// them (SPEC §6).
type commentCounter struct {
	r         io.Reader
	keepalive func()
	lineStart bool // reports whether the next byte begins a line
}

func newCommentCounter(r io.Reader, keepalive func()) *commentCounter {
	return &commentCounter{r: r, keepalive: keepalive, lineStart: true}
}

func (c *commentCounter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	for _, ch := range p[:n] {
		switch {
		case ch == '\n' || ch == '\r':
			c.lineStart = true
		case c.lineStart:
			c.lineStart = false
			if ch == ':' {
				c.keepalive()
			}
		}
	}
	return n, err
}
