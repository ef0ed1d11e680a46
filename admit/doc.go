// Package admit is a process's door for runs: it refuses, at once and
// with a labeled reason, a run the process cannot serve on time, rather
// than let it start and end past its deadline (issue 25).
//
// A run's deadline holds only while the process has the CPU to serve it.
// Ten thousand runs released at once on two cores end up to a second past
// B: not because a timer fires late (a lone 1s timer fires 3ms late) but
// because each run waits for the CPU behind the others. A [Limiter] is
// asked once per run, when the run starts ([Limiter.Admit]), and answers
// at once: admitted, until [Limiter.Done]; or refused with an error that
// matches [ErrAtCapacity] and is a [*AtCapacityError], which says why.
// It refuses a run when
//
//   - [Config.Limit] runs are already running: the limit set by the user,
//     or measured on the machine (bench/fleet), beyond which runs end late;
//   - or the run reached the door more than [Config.Late] after it was
//     submitted (its budget's start, which the caller made at submission):
//     that wait is the scheduling lateness the process has now, measured on
//     the very run, and a run already that late is not served at once.
//
// The zero Config limits nothing: a process that sets no limit runs every
// run, as it did before admission existed. A nil *Limiter is that zero
// Limiter too, so that a config without one needs no check.
//
// The package is its own, not a part of harness, because the limit is the
// process's, not a run's: one Limiter is shared by every run of a process
// (harness.Config.Admit, harness serve's --max-runs), and the in-process
// host and any other host ask the same door. It holds a counter, not a
// rule of the run machine: time is an argument ([Limiter.Admit]'s now and
// submitted), and it never waits, so it needs no context.
package admit
