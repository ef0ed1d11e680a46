package harness

import (
	"errors"
	"fmt"
	"time"

	"github.com/glidepath/glidepath/admit"
	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/landing"
)

// admitted asks the process's door (cfg.Admit) whether the run on b may
// start now: b's start is when the caller submitted the run, and how long
// it took to come here is the process's scheduling lateness (issue 25). A
// run admitted holds its place until [Session.Close]; a refused one is a
// [*admit.AtCapacityError], and nothing of it starts.
func (cfg *Config) admitted(b *budget.Budget) error {
	return cfg.Admit.Admit(time.Now(), b.Start())
}

// AtCapacity returns the labeled result of the run with id (empty: a
// fresh one) on b that [Start] refused at the door ([Config.Admit]) with
// err, and true; or false when err is not such a refusal. The run was not
// started: its result has no steps and no attempts, cause
// [landing.CauseAtCapacity], and it is made now, long before the run's
// deadline, never after it (issue 25). [Run] returns it itself; a caller
// of Start that answers for its runs, as `harness run` does, calls it.
func AtCapacity(b *budget.Budget, id string, err error) (landing.Result, bool) {
	ae, ok := errors.AsType[*admit.AtCapacityError](err)
	if !ok {
		return landing.Result{}, false
	}
	if id == "" {
		id = newRunID()
	}
	why := fmt.Sprintf("the process was running %d runs, its limit", ae.Running)
	if ae.Limit == 0 {
		why = fmt.Sprintf("it waited %s to start, more than the %s the process allows", landing.Human(ae.Waited), ae.Late)
	}
	return landing.Result{RunID: id, Status: landing.Partial, Cause: landing.CauseAtCapacity,
		Boundary: "At capacity: the run was not started, " + why + ". Nothing was done; submit it again later.",
		Budget:   landing.ReportOf(b, time.Now())}, true
}
