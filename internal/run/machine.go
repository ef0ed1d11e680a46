package run

import (
	"cmp"
	"strings"
	"time"

	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/model"
	"github.com/glidepath/glidepath/trace"
	"github.com/glidepath/glidepath/watchdog"
)

// Rules are what a run's machine needs to know, fixed for the run.
type Rules struct {
	Task     string
	Quiet    time.Duration // the quiet period, which the boundary of a stall names
	MaxSteps int           // the most model turns; the landing call is none
	// MaxRepeats is how many repeated tool calls make the run stuck
	// (repeats.go); zero sets no limit.
	MaxRepeats int
	// Parallel reports whether the run may have a turn's calls made side
	// by side (a parallel width above 1): a turn asks for it in the
	// explore phase only.
	Parallel bool
}

// Figures are what the host reads off its run when an event happens: the
// machine is given time, never reads it.
type Figures struct {
	// Ended is why the run's work ended before its budget did: its quiet
	// clock, its wall, or its caller; "" while it goes on.
	Ended landing.Cause
	Phase landing.Phase // the ladder's phase now
	// The landing's budget (Landing): the time until its deadline, its
	// reserve and floor, and the model's p50.
	Remaining, Reserve, Floor, P50 time.Duration
	// Cancelled reports that the run's caller cancelled it (the first
	// Ctrl-C), SinceCancel ago (Landing): its landing is over within the
	// reserve R of that moment, not of the landing's start (SPEC §3).
	Cancelled   bool
	SinceCancel time.Duration
	// Calls are the run's calls as its record stands (Landing, and the
	// result): the host keeps them, since its calls' ends change them.
	Calls []landing.Call
}

// Reply is what a model turn that answered said: its text, how many tool
// calls it asked for, and why it stopped.
type Reply struct {
	Content      string
	ToolCalls    int
	FinishReason string
}

// EventKind names what happened.
type EventKind uint8

const (
	// Begun: the run's setup is over and it went well (a setup that did
	// not is Stopped, whose Setup names what did not finish).
	Begun EventKind = iota + 1
	// TurnEnded: the model turn MakeTurn asked for has ended, as Turn (the
	// turn machine's TurnDone) and, when it answered, Reply say.
	TurnEnded
	// CallsEnded: the calls MakeCalls asked for have ended.
	CallsEnded
	// Stopped: the host lands the run (unless Figures.Ended says why its
	// work ended first) for Cause of its own — a setup that
	// failed (Failure says how), its embedder's Land —; NoCall when there
	// is no landing call to make.
	Stopped
	// Landing: the host has done what Land asked and is ready: Figures
	// are the landing's budget and the run's calls.
	Landing
	// LandingEnded: the landing call has ended: Failed with Why, or what
	// it answered, Reply.Content.
	LandingEnded
)

// An Event is what the host tells the machine.
type Event struct {
	Kind    EventKind
	Figures Figures
	Turn    model.TurnCommand // TurnEnded
	Reply   Reply             // TurnEnded, LandingEnded
	Setup   []string          // Begun, Stopped
	Cause   landing.Cause     // Stopped
	Failure string            // Stopped
	// Stall is, when the quiet clock stopped the run (Landing), what it
	// said: the boundary names the silent call (issue 27).
	Stall  *watchdog.StallError
	NoCall bool   // Stopped
	Failed bool   // LandingEnded
	Why    string // LandingEnded
	// Open (TurnEnded) is a turn of an embedder's own loop (a Session's
	// Turn): the machine takes how it ended — the step, the words a
	// landing would read — and asks for nothing, since what its reply
	// asks for, and whether a failure lands, are the embedder's to say.
	Open bool
}

// CommandKind names what the host is to do.
type CommandKind uint8

const (
	// MakeTurn: make model turn Step with the tools on offer, asking for
	// parallel calls when Parallel, then send TurnEnded.
	MakeTurn CommandKind = iota + 1
	// MakeCalls: make the tool calls the reply asked for, give each its
	// tool message, then send CallsEnded.
	MakeCalls
	// Land: the run lands for Cause: move the ladder to land, stop
	// starting work, land the sub-agents, then send Landing.
	Land
	// MakeLandingCall: send the landing call as Plan says (its note,
	// prompt and lease), then send LandingEnded.
	MakeLandingCall
	// Done: the run has its result: write Record when it has an Event (the
	// landing record), give the cancels their grace, and take
	// [Machine.Result].
	Done
)

// A Command is what the machine asks of its host.
type Command struct {
	Kind     CommandKind
	Step     int                 // MakeTurn: the step the turn is, if it is made
	Parallel bool                // MakeTurn
	Cause    landing.Cause       // Land, MakeLandingCall, Done ("" for an answer)
	Plan     landing.LandCommand // MakeLandingCall
	// Record is Done's landing record; nil for an answer. A pointer, made
	// once at a run's end, because a host keeps its Command for the whole
	// run and a trace.Record is 488 bytes: held inline it was the largest
	// part of an idle run's own memory (issue 25, item 6).
	Record *trace.Record
}

// A Machine is one run's sequence and the state its landing reads. The
// zero Machine is not usable; make one with [New].
//
// A Machine is part of every run a host keeps, for the whole run: the
// plan of its landing, which only a run that lands has, is made then, and
// the flags are together, last (issue 25 item 6).
type Machine struct {
	rules Rules
	steps int // model turns made
	// The words of the boundary: what stopped the run, what it was doing
	// when the budget refused its turn, how its last model attempt went
	// unanswered; and how that attempt ended, for the landing call rule.
	failure, doing, unanswered string
	end                        landing.ModelEnd
	x                          *rare // nil until the run has some

	cause   landing.Cause
	plan    *landing.LandCommand // the landing's plan, once decided; never changed after
	answer  string
	asked   bool // a model turn made an attempt
	summary bool // the landing has a call to make
	landing bool // Land was asked for
	done    bool
}

// rare is what a Machine keeps that many runs never have: the pieces of
// a setup that did not finish, and the tool calls it made (repeats.go).
// A Machine holds it by a pointer made at its first need, as it holds its
// plan: a Session holds a Machine, and is kept in its size class (issue
// 25 item 6), which the calls' fields would have outgrown.
type rare struct {
	setup []string
	rep   repeats
	// silent is, for a run its quiet clock stopped on a call whose
	// allowance held it, how long that call was silent: the time the
	// boundary says there was no progress for, not Q (issue 27).
	silent time.Duration
}

// more returns m's rare state, made if it has none yet.
func (m *Machine) more() *rare {
	if m.x == nil {
		m.x = new(rare)
	}
	return m.x
}

// setup returns the pieces of the run's setup that did not finish.
func (m *Machine) setup() []string {
	if m.x == nil {
		return nil
	}
	return m.x.setup
}

// setSetup keeps the pieces of the run's setup that did not finish.
func (m *Machine) setSetup(setup []string) {
	if setup != nil || m.x != nil {
		m.more().setup = setup
	}
}

// New returns the machine of a run under r.
func New(r Rules) Machine { return Machine{rules: r, summary: true} }

// Step feeds e to the machine and returns what the host does next. After
// Done every step returns Done again.
func (m *Machine) Step(e Event) Command {
	if m.done {
		return Command{Kind: Done, Cause: m.cause}
	}
	f := e.Figures
	switch e.Kind {
	case Begun:
		m.setSetup(e.Setup)
		return m.next(f)
	case CallsEnded:
		return m.next(f)
	case TurnEnded:
		if e.Open {
			m.took(f, e.Turn)
			return Command{}
		}
		return m.turnEnded(f, e.Turn, e.Reply)
	case Stopped:
		if e.Setup != nil {
			m.setSetup(e.Setup)
		}
		if e.Failure != "" && m.failure == "" {
			m.failure = e.Failure
		}
		// The run's own end names it, whatever stopped the host; a host
		// that lands as the machine asked (Land) may leave Cause to it.
		m.summary = !e.NoCall
		return m.land(cmp.Or(f.Ended, e.Cause, m.cause))
	case Landing:
		if st := e.Stall; st != nil && m.cause == landing.CauseQuiet {
			if w := landing.QuietWords(*st, m.unanswered); w != "" {
				m.failure = w // the silent call, more than how the turn it cut went
			}
			if c := st.Call; c.Held {
				m.more().silent = c.For
			}
		}
		return m.decide(f)
	case LandingEnded:
		plan := cmp.Or(m.plan, &landing.LandCommand{}) // none yet: a host's LandingEnded out of turn
		rec, answer := plan.Landed(m.cause, e.Failed, e.Why, e.Reply.Content)
		return m.finish(rec, answer)
	}
	return Command{}
}

// next asks for the next turn, or lands the run when it must (MustLand).
func (m *Machine) next(f Figures) Command {
	if cause, ok := landing.MustLand(m.Loop(f.Ended, f.Phase)); ok {
		return m.land(cause)
	}
	// Only explore widens (landing.WidenAt), read here without making the
	// refusal a later phase would be: a step allocates nothing.
	return Command{Kind: MakeTurn, Step: m.steps + 1, Parallel: m.rules.Parallel && f.Phase == landing.Explore}
}

// turnEnded takes how the turn ended, t, and what it answered: a turn the
// budget refused before anything was sent is no step, and says there was
// no time for one; a failed turn lands on the turn's cause unless the
// run's work ended first (TurnCause); a reply that asks for calls has
// them made; one that is not a whole answer lands upstream with the
// process's words; an answer is the run's result.
func (m *Machine) turnEnded(f Figures, t model.TurnCommand, r Reply) Command {
	m.took(f, t)
	if !t.OK {
		return m.land(landing.TurnCause(f.Ended, t.Cause == landing.CauseBudget))
	}
	// A reply cut at its token limit may carry a call cut short (issue
	// 28: its arguments end where the limit did): none of its calls is
	// made, a write least of all.
	why := model.CheckFinish(r.FinishReason)
	if r.ToolCalls > 0 && why == nil {
		return Command{Kind: MakeCalls}
	}
	if why == nil && strings.TrimSpace(r.Content) != "" {
		m.done, m.answer = true, r.Content
		return Command{Kind: Done} // the answer is the reply the host has
	}
	// Cut at the token limit, withheld by a filter, or empty: not the
	// answer (SPEC §3); the boundary says which.
	cause := landing.TurnCause(f.Ended, false)
	if cause == landing.CauseUpstream {
		m.failure = landing.EmptyAnswer
		if why != nil {
			m.failure = model.Describe(why)
		}
	}
	return m.land(cause)
}

// took keeps what a turn that ended as t says for the landing: the step
// it was, unless the budget refused it before anything was sent; how its
// last attempt went; and, when it failed while the run's work went on,
// its words (an answer clears those of a turn before it, which an
// embedder's loop may have tried again).
func (m *Machine) took(f Figures, t model.TurnCommand) {
	if t.OK || t.N > 0 {
		m.steps++
		m.asked = true
	}
	m.unanswered, m.end = t.Unanswered, t.End
	if t.Doing != "" {
		m.doing = t.Doing
	}
	switch {
	case t.OK:
		m.failure = ""
	case f.Ended == "":
		m.failure = t.Failure
	}
}

// Loop is what the run knows of itself when it asks [landing.MustLand],
// its work having ended for ended ("" while it goes on) in phase: a
// Session asks it for its embedder's loop too.
func (m *Machine) Loop(ended landing.Cause, phase landing.Phase) landing.Loop {
	return landing.Loop{Ended: ended, Phase: phase, Steps: m.steps, MaxSteps: m.rules.MaxSteps,
		Repeats: m.Repeats(), MaxRepeats: m.rules.MaxRepeats}
}

// land begins the landing for cause: the host prepares it and sends
// Landing. A run stuck repeating a call names the call.
func (m *Machine) land(cause landing.Cause) Command {
	if cause == landing.CauseStuck && m.failure == "" && m.Repeats() > 0 {
		m.failure = m.x.rep.stuckWords()
	}
	m.cause, m.landing = cause, true
	return Command{Kind: Land, Cause: cause}
}

// decide decides the landing on the landing's figures (landing.Plan).
func (m *Machine) decide(f Figures) Command {
	if m.cause == landing.CauseCancelled && f.Cancelled {
		// "Land now" is an answer within R of the Ctrl-C: what the
		// landing waited for since (a cut call's own answer) is spent
		// from R, as a Session's landing budget is shortened to it.
		f.Remaining = min(f.Remaining, max(f.Reserve-f.SinceCancel, 0))
	}
	plan := landing.Plan(landing.Landing{Record: m.Record(m.cause, f.Calls), Unanswered: m.unanswered,
		Summarizer: m.summary, End: m.end, Remaining: f.Remaining, Reserve: f.Reserve, Floor: f.Floor, P50: f.P50})
	m.plan = &plan
	m.failure = m.plan.Failure
	if m.plan.Call {
		return Command{Kind: MakeLandingCall, Cause: m.cause, Plan: plan}
	}
	rec, answer := m.plan.Landed(m.cause, false, "", "")
	return m.finish(rec, answer)
}

// finish ends the landing with its record and the landing call's answer
// ("" for the harness's summary).
func (m *Machine) finish(rec trace.Record, answer string) Command {
	m.done, m.answer = true, answer
	c := Command{Kind: Done, Cause: m.cause}
	if rec.Event != "" {
		c.Record = &rec
	}
	return c
}

// Record is what the run knows about itself when it lands for cause (""
// for an answer), its calls as the host keeps them. With no call to list
// and no failure to name, the boundary says what the run was doing: why
// the budget refused its turn, else whether the model had been asked.
func (m *Machine) Record(cause landing.Cause, calls []landing.Call) landing.Record {
	rec := landing.Record{Task: m.rules.Task, Cause: cause, Step: m.steps, Quiet: m.rules.Quiet,
		Failure: m.failure, Doing: m.doingWords(), Calls: calls}
	if m.steps == 0 {
		rec.Setup = m.setup() // no model turn was made: the setup is all the run did
	}
	if m.x != nil && m.x.silent > 0 {
		rec.Quiet = m.x.silent
	}
	return rec
}

// doingWords says, for a boundary with no call to list and no failure to
// name, what the run was doing when it stopped: why the budget refused
// its turn, when its host knows, else whether its model had been asked.
func (m *Machine) doingWords() string {
	switch {
	case m.doing != "":
		return m.doing
	case m.asked:
		return "the model had not answered yet"
	}
	return "no model turn had started"
}

// Result is the run's result once Done, its calls as the host keeps them
// once their cancels had their grace: the answer, settled against the
// calls (landing.Settle), or the landing's summary, with the landing
// call's answer when it gave one. Its totals are the host's to add
// (landing.Finish), [Machine.Steps] among them.
func (m *Machine) Result(calls []landing.Call) landing.Result {
	if !m.landing {
		return landing.Settle(m.Record("", calls), m.answer)
	}
	return landing.SummarizeWith(m.Record(m.cause, calls), m.answer)
}

// Steps returns the model turns made.
func (m *Machine) Steps() int { return m.steps }

// Cause returns the cause the machine lands for, once it has asked its
// host to land (Land); "" before.
func (m *Machine) Cause() landing.Cause { return m.cause }

// A State is a Machine between two model turns, as plain data: what a host
// that moves a run to another process carries (a Temporal run that
// continues as new, issue 26) so that [Resume] makes the same machine.
// Between turns no landing has begun, so the landing's own state (its
// cause, plan and answer) is not in it.
type State struct {
	Steps                      int
	Failure, Doing, Unanswered string
	End                        landing.ModelEnd
	Setup                      []string `json:",omitempty"`
	Asked                      bool
	// The run's calls as repeats.go remembers them: their digests, the
	// repeats so far and the last repeated call, in words.
	Seen     map[string]string `json:",omitempty"`
	Repeats  int               `json:",omitempty"`
	Repeated string            `json:",omitempty"`
}

// State returns m's state; m is between two model turns (its last command
// was MakeTurn).
func (m *Machine) State() State {
	s := State{Steps: m.steps, Failure: m.failure, Doing: m.doing, Unanswered: m.unanswered, End: m.end, Setup: m.setup(), Asked: m.asked}
	if m.x != nil {
		r := &m.x.rep
		s.Seen, s.Repeats, s.Repeated = r.seen, r.n, r.last
	}
	return s
}

// Resume returns the machine of a run under r that stood at s between two
// turns: the host steps it on from there (CallsEnded) as it would have
// stepped the machine s was taken from.
func Resume(r Rules, s State) Machine {
	m := New(r)
	m.steps, m.failure, m.doing, m.unanswered, m.end, m.asked = s.Steps, s.Failure, s.Doing, s.Unanswered, s.End, s.Asked
	m.setSetup(s.Setup)
	if s.Seen != nil {
		m.more().rep = repeats{seen: s.Seen, n: s.Repeats, last: s.Repeated}
	}
	return m
}
