package main

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/glidepath/glidepath/harness"
)

func TestTheFirstInterruptLandsAndTheSecondExitsWith130(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancelCause(t.Context())
		defer cancel(nil)
		signals := make(chan os.Signal, 2)
		exited := make(chan int, 1)
		done := make(chan struct{})
		var stderr strings.Builder
		go func() {
			defer close(done)
			interrupts(signals, cancel, &stderr, func(code int) { exited <- code })
		}()

		signals <- os.Interrupt
		synctest.Wait()
		if !errors.Is(context.Cause(ctx), harness.ErrInterrupted) {
			t.Fatalf("after one interrupt the cause is %v, want harness.ErrInterrupted", context.Cause(ctx))
		}
		select {
		case code := <-exited:
			t.Fatalf("the first interrupt exited with %d", code)
		default:
		}

		signals <- os.Interrupt
		<-done
		if code := <-exited; code != exitInterrupted {
			t.Errorf("the second interrupt exited with %d, want %d", code, exitInterrupted)
		}
		if got := stderr.String(); !strings.HasPrefix(got, "\nharness: interrupted twice") {
			t.Errorf("stderr %q, want a new line that says why the process ends", got)
		}
	})
}
