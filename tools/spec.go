package tools

import (
	"encoding/json"
	"time"
)

// DefaultMaxAttempts is the attempts a call gets when [Spec.MaxAttempts] is
// zero.
const DefaultMaxAttempts = 3

// Effect says whether a tool changes the world. It decides whether a failed
// attempt may simply be sent again (SPEC §2, §5).
type Effect string

const (
	// Read: the tool only reads, so an attempt may be retried.
	Read Effect = "read"
	// Write: the tool changes something. A write is never retried blindly: a
	// remote write whose attempt timed out is reconciled by its key.
	Write Effect = "write"
)

// A Spec describes a tool: what the model is told about it and how the
// harness calls it. Only Name is required; the zero value of every other
// field selects its documented default.
type Spec struct {
	// Name is how the model calls the tool: 1 to 64 letters, digits, '_'
	// or '-', as chat APIs require of function names.
	Name string

	// Kind is the step kind of the tool's calls, in traces and in the
	// budget's latency estimates. Empty means KindPrefix + Name
	// ("tool:search"); a tool that is not a plain tool says so ("agent:NAME"
	// for a sub-agent).
	Kind string

	// Description tells the model what the tool does.
	Description string

	// Parameters is the JSON Schema of the arguments. Nil means
	// {"type":"object"}: any object.
	Parameters json.RawMessage

	// Effect is Read or Write. Empty means Write: a tool is assumed to
	// change something until it says it only reads.
	Effect Effect

	// Ceiling bounds each attempt; zero means only the budget does.
	Ceiling time.Duration

	// P50 and P95 are the latencies the tool declares, used to lease its
	// first calls until enough of them have been observed. Zero is unknown.
	P50, P95 time.Duration

	// Silence is how long a call may go without a sign of progress and
	// still be healthy: it replaces twice the p95 as the call's allowance
	// on the quiet clock (watchdog.Expected.Stated, issue 27). Zero: twice
	// the p95.
	Silence time.Duration

	// Speculative marks a call the run may skip once it narrows (SPEC §3).
	Speculative bool

	// Cancellable claims that the tool can stop a call by its key, so that
	// a call cut short is cancelled (SPEC §5). A capability is what the
	// tool's type implements: a tool that is a [cancel.Canceller] is
	// cancelled whether its spec says so or not, and [Registry.Register]
	// refuses a spec that claims Cancellable for a type that is not one
	// ([ErrNoCapability]). False claims nothing. [Registry.Specs] reports
	// it as it will be used: true exactly when calls are cancelled.
	//
	// [Remote] is the exception the protocol makes: a tool server serves
	// the cancel endpoint only when its manifest or config entry says
	// cancellable, so a remote spec without Cancellable is made
	// NotCancellable.
	Cancellable bool

	// NotCancellable turns cancelling off for a tool whose type is a
	// [cancel.Canceller]: its calls cut short are never cancelled (a read
	// is left abandoned, a write reconciled or orphaned as always). A spec
	// may only turn a capability off this way; one that says both
	// Cancellable and NotCancellable is refused.
	NotCancellable bool

	// MaxAttempts is the most attempts a call makes, the first included.
	// Zero means DefaultMaxAttempts. A write's only repeat is the same key
	// sent again after its tool said it never received it.
	MaxAttempts int
}

// State is where a call that did not finish was left, as listed in the
// in_flight field of a run's result (SPEC §4).
type State string

const (
	// StateCancelled: its cancel was accepted, or its local context ended
	// (a local tool, a subprocess group killed).
	StateCancelled State = "cancelled"
	// StateAbandoned: a read we stopped waiting for that could not be
	// cancelled.
	StateAbandoned State = "abandoned"
	// StateOrphaned: a write whose outcome is unknown; it is in the journal.
	StateOrphaned State = "orphaned"
)
