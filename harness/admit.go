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

// atCapacity returns the labeled result of the run with id (empty: a
// fresh one) on b that the door refused with err, and true; or false when
// err is not a refusal at the door. The run was not started: it has no
// records, no steps and no attempts, and it returns now, long before its
// deadline, never after it (issue 25).
func atCapacity(b *budget.Budget, id string, err error) (landing.Result, bool) {
	ae, ok := errors.AsType[*admit.AtCapacityError](err)
	if !ok {
		return landing.Result{}, false
	}
	if id == "" {
		id = newRunID()
	}
	why := fmt.Sprintf("the process was running %d runs, its limit", ae.Running)
	if ae.Limit == 0 {
		why = fmt.Sprintf("it waited %s to start, more than the %s the process allows", landing.Human(ae.Waited), landing.Human(ae.Late))
	}
	return landing.Result{RunID: id, Status: landing.Partial, Cause: landing.CauseAtCapacity,
		Boundary: "At capacity: the run was not started, " + why + ". Nothing was done; submit it again later.",
		Budget:   landing.ReportOf(b, time.Now())}, true
}
