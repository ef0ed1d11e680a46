// Package run holds the sequencing of one run as a pure state machine,
// the level above the leaves (issue 25): when the run makes a model turn,
// what it does with the reply (the tool calls it asks for, the answer, or
// a landing), when it must land and how (the landing call, or the
// harness's summary), and the state the landing reads — the steps made,
// the words of what stopped the run (its failure, what it was doing, how
// its last model attempt went unanswered) and how that attempt ended
// ([landing.ModelEnd]).
//
// A [Machine] composes the leaves: [landing.MustLand], [landing.TurnCause]
// and [landing.Plan] decide, and the model turn's own rules are
// [model.TurnMachine]'s, whose TurnDone the host hands back as an event.
// It does no I/O, starts no goroutine, reads no clock and takes no lock:
// the host feeds it [Event]s, each with the figures of its budget at that
// moment ([Figures]), and performs the [Command] each [Machine.Step]
// returns. The harness's own loop does so through a Session, which feeds
// it the same events for a loop of its embedder's (a Turn's end is an
// Open TurnEnded; Land is Stopped), so that every landing in process
// reads its state from here; the Temporal workflow of temporal/durable
// does so with activities, so that both keep one sequence and one set of
// words.
//
// It is internal: its events name the hosts' own steps (a Session's
// turn, a workflow's activity), and no third-party host drives a run yet.
// The nested module temporal/ imports it, as its path is under the root
// module's.
package run
