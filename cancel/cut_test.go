package cancel_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/cancel"
)

// hangingCanceller answers nothing until its context ends.
type hangingCanceller struct{}

func (hangingCanceller) Cancel(ctx context.Context, _ cancel.Key) error {
	<-ctx.Done()
	return context.Cause(ctx)
}

// A cancel its Group cuts ends at once, and what its done hears matches
// ErrNotWaited, ErrNoAnswer and the cause; a cancel sent after the cut is
// not cut by it.
func TestCutEndsTheCancelsInFlightAndOnlyThose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, err := budget.New(budget.Config{Total: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		var g cancel.Group
		heard := make(chan error, 2)
		start := time.Now()
		if _, err := g.Go(t.Context(), b, hangingCanceller{}, "k1", func(err error) { heard <- err }); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
		why := errors.New("the result exists")

		g.Cut(why)
		if _, err := g.Go(t.Context(), b, hangingCanceller{}, "k2", func(err error) { heard <- err }); err != nil {
			t.Fatal(err)
		}

		err = <-heard
		if !errors.Is(err, cancel.ErrNotWaited) || !errors.Is(err, cancel.ErrNoAnswer) || !errors.Is(err, why) {
			t.Errorf("the cut cancel heard %v, want ErrNotWaited, ErrNoAnswer and the cause", err)
		}
		if got := time.Since(start); got != 100*time.Millisecond {
			t.Errorf("the cut cancel ended after %v, want at the cut, 100ms", got)
		}
		err = <-heard // k2 runs its lease: the cancel's ceiling, 2s
		if errors.Is(err, cancel.ErrNotWaited) || time.Since(start) != 100*time.Millisecond+cancel.CancelLease {
			t.Errorf("the cancel sent after the cut heard %v after %v, want its lease's end", err, time.Since(start))
		}
		g.Wait(t.Context())
	})
}
