package watchdog

import (
	"testing"
	"testing/synctest"
	"time"
)

// The quiet timer is internal, so only a test inside the package can see
// that Stop leaves none armed, however the run went before it.
func TestStopLeavesNoTimerArmed(t *testing.T) {
	cases := []struct {
		name  string
		drive func(w *Watchdog)
	}{
		{"stopped at once", func(w *Watchdog) {}},
		{"stopped after the timer re-armed for a moved deadline", func(w *Watchdog) {
			time.Sleep(30 * time.Second)
			w.Mark(ToolCall)
			time.Sleep(45 * time.Second) // past the first arming at 60s
		}},
		{"stopped after the stall", func(w *Watchdog) { time.Sleep(2 * time.Minute) }},
		{"stopped after the wall", func(w *Watchdog) {
			for range 40 {
				w.Mark(Checkpoint)
				time.Sleep(10 * time.Second)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w, _, err := Start(t.Context(), Config{Wall: time.Now().Add(5 * time.Minute)})
				if err != nil {
					t.Fatal(err)
				}
				tc.drive(w)
				synctest.Wait()
				w.Stop()
				w.mu.Lock()
				defer w.mu.Unlock()
				if w.timer == nil {
					t.Fatal("no quiet timer was ever armed")
				}
				if w.timer.Stop() {
					t.Error("the quiet timer is still armed after Stop")
				}
				if w.clock.sources != nil {
					t.Error("progress sources kept after Stop")
				}
			})
		})
	}
}

func TestNoQuietTimerIsArmedForADeadlineAtTheWall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w, _, err := Start(t.Context(), Config{Quiet: time.Minute, Wall: time.Now().Add(time.Minute)})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.timer != nil {
			t.Error("a quiet timer was armed for a deadline the wall decides")
		}
	})
}
