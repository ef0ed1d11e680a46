package tools

import (
	"context"
	"errors"
	"github.com/glidepath/glidepath/watchdog"
	"net/http"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/cancel"
	"github.com/glidepath/glidepath/trace"
)

// Exact-time tests of remote tools: the client's transport calls the tool
// server's handler in memory (memClient), inside a synctest bubble, so that
// every instant can be asserted to the nanosecond.

// maxJitter makes every backoff sleep its ceiling, base·2^(n−1).
var maxJitter = func(n int64) int64 { return n - 1 }

func TestTheCancelIsSentTheInstantTheLeaseEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		s := &toolServer{post: hang}
		spec := Spec{Name: "fetch", Effect: Read, Ceiling: 2 * time.Second, Cancellable: true, MaxAttempts: 1}
		reg := mustRegister(t, Remote(spec, "http://tools.test", memClient(s.handler())))
		rec := newRecorder(t)

		res := reg.Call(t.Context(), &Run{Budget: newBudget(t, time.Minute), Observer: rec.observer()}, "fetch", nil)

		if got := time.Since(start); got != 2*time.Second {
			t.Errorf("returned after %v, want 2s", got)
		}
		posts, _, cancels := s.got()
		if len(cancels) != 1 || cancels[0].At.Sub(start) != 2*time.Second || cancels[0].Key != posts[0].Key {
			t.Fatalf("cancels %+v; want one at 2s for key %s", cancels, posts[0].Key)
		}
		if posts[0].Budget != "2000" {
			t.Errorf("Budget-Remaining-Ms %q, want 2000", posts[0].Budget)
		}
		if res.State != StateCancelled || len(rec.cancels) != 1 || rec.cancels[0] != nil {
			t.Errorf("state %q, cancels observed %v", res.State, rec.cancels)
		}
	})
}

func TestTheQuietClockCancelsACallInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		s := &toolServer{post: stream(`progress {"units":1}`)}
		s.post = func(w http.ResponseWriter, r *http.Request, n int) {
			stream(`progress {"units":1}`, ": ping")(w, r, n)
			hang(w, r, n)
		}
		reg := mustRegister(t, Remote(Spec{Name: "job", Effect: Read, Cancellable: true}, "http://tools.test", memClient(s.handler())))
		ctx, stop := context.WithCancelCause(t.Context())
		time.AfterFunc(5*time.Second, func() { stop(&watchdog.StallError{Quiet: 5 * time.Second}) })
		rec := newRecorder(t)

		res := reg.Call(ctx, &Run{Budget: newBudget(t, time.Minute), Observer: rec.observer()}, "job", nil)

		_, _, cancels := s.got()
		if len(cancels) != 1 || cancels[0].At.Sub(start) != 5*time.Second {
			t.Errorf("cancels %+v; want one at 5s", cancels)
		}
		if res.Outcome != trace.Quiet || res.State != StateCancelled || res.Attempts != 1 {
			t.Errorf("result %+v", res)
		}
		if a := rec.ends[0]; a.Keepalives != 1 || rec.count(watchdog.Progress) != 1 || a.Outcome != trace.Quiet {
			t.Errorf("attempt %+v, events %v", a, rec.kinds())
		}
	})
}

func TestRetryAfterDecidesTheSleep(t *testing.T) {
	cases := []struct {
		name       string
		retryAfter string
		wantPosts  int
		wantAt     []time.Duration
		wantGiveUp string
	}{
		{"a retry-after that fits is slept", "3", 2, []time.Duration{0, 3 * time.Second}, ""},
		{"a retry-after-ms that fits is slept", "", 2, []time.Duration{0, 1500 * time.Millisecond}, ""},
		{"a retry-after past the budget gives up at once", "3600", 1, []time.Duration{0}, budget.RetryAfterExceedsBudget},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				s := &toolServer{post: func(w http.ResponseWriter, r *http.Request, n int) {
					if n == 1 {
						if tc.retryAfter != "" {
							w.Header().Set("Retry-After", tc.retryAfter)
						} else {
							w.Header().Set("Retry-After-Ms", "1500")
						}
						writeJSON(w, http.StatusTooManyRequests, `{"error":{"message":"slow down"}}`)
						return
					}
					writeJSON(w, http.StatusOK, `{"output":"ok"}`)
				}}
				reg := mustRegister(t, Remote(Spec{Name: "search", Effect: Read}, "http://tools.test", memClient(s.handler())))
				rec := newRecorder(t)

				res := reg.Call(t.Context(), &Run{Budget: newBudget(t, time.Minute), Observer: rec.observer()}, "search", nil)

				posts, _, _ := s.got()
				var at []time.Duration
				for _, p := range posts {
					at = append(at, p.At.Sub(start))
				}
				// A server's wait is the earliest retry; the spread after
				// it is at most the first retry's backoff ceiling.
				if len(at) != len(tc.wantAt) || at[0] != 0 || (len(at) > 1 && (at[1] < tc.wantAt[1] || at[1] > tc.wantAt[1]+budget.DefaultBase)) {
					t.Errorf("POSTs at %v, want %v (the second at most %v later)", at, tc.wantAt, budget.DefaultBase)
				}
				if len(rec.backoffs) != 1 || rec.backoffs[0].Source != budget.FromRetryAfter || rec.backoffs[0].Reason != tc.wantGiveUp {
					t.Errorf("backoffs %+v", rec.backoffs)
				}
				if tc.wantGiveUp == "" {
					if res.Err != "" {
						t.Errorf("result %+v", res)
					}
					return
				}
				if got := time.Since(start); got != 0 {
					t.Errorf("gave up after %v, want at once", got)
				}
				if !errors.Is(res.Cause, trace.ErrGaveUp) || res.Outcome != trace.RateLimited {
					t.Errorf("result %+v", res)
				}
			})
		})
	}
}

func TestAWriteStillRunningAsksAgainUntilItSettles(t *testing.T) {
	cases := []struct {
		name      string
		doneAt    int // the ask that says done; 0: never
		wantAsks  []time.Duration
		wantState State
	}{
		// The lease ends at 2s; asks follow after sleeps of 100ms, 200ms, …
		{"done on the third ask", 3, []time.Duration{2000 * time.Millisecond, 2100 * time.Millisecond, 2300 * time.Millisecond}, ""},
		// A 10s budget: work may run until 7.5s. A 1s base sleeps 1s, 2s,
		// then 4s, which would pass 7.45s: the last ask comes instead when
		// only cancel.FinalAsk and the floor are left, at 7.2s, and the
		// call still running then is an orphan.
		{"still running when the budget says stop", 0, []time.Duration{2 * time.Second, 3 * time.Second, 5 * time.Second, 7200 * time.Millisecond}, StateOrphaned},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				s := &toolServer{post: hang, status: func(w http.ResponseWriter, r *http.Request, n int) {
					if n == tc.doneAt {
						writeJSON(w, http.StatusOK, `{"state":"done","output":"paid"}`)
						return
					}
					writeJSON(w, http.StatusOK, `{"state":"running"}`)
				}}
				reg := mustRegister(t, Remote(Spec{Name: "pay", Effect: Write, Ceiling: 2 * time.Second}, "http://tools.test", memClient(s.handler())))
				base := 100 * time.Millisecond
				total := time.Minute
				if tc.doneAt == 0 {
					base, total = time.Second, 10*time.Second
				}
				journal := filepath.Join(t.TempDir(), "orphans.jsonl")
				j, err := cancel.OpenJournal(journal)
				if err != nil {
					t.Fatal(err)
				}
				defer j.Close()
				run := &Run{Budget: newBudget(t, total), Journal: j, Backoff: budget.Backoff{Base: base, Rand: maxJitter}}

				res := reg.Call(t.Context(), run, "pay", nil)

				posts, asks, _ := s.got()
				var at []time.Duration
				for _, a := range asks {
					at = append(at, a.At.Sub(start))
				}
				if len(posts) != 1 || !slices.Equal(at, tc.wantAsks) {
					t.Errorf("%d POSTs, asks at %v; want 1 POST, asks at %v", len(posts), at, tc.wantAsks)
				}
				if res.State != tc.wantState {
					t.Errorf("state %q, want %q (%+v)", res.State, tc.wantState, res)
				}
				entries, err := cancel.ReadJournal(journal)
				if err != nil {
					t.Fatal(err)
				}
				if tc.wantState == "" {
					if string(res.Output) != `"paid"` || len(entries) != 0 {
						t.Errorf("output %s, journal %v", res.Output, entries)
					}
					return
				}
				if len(entries) != 1 || !errors.Is(res.Cause, cancel.ErrStillRunning) {
					t.Errorf("journal %v, cause %v", entries, res.Cause)
				}
				if got := time.Since(start); got != 7200*time.Millisecond {
					t.Errorf("returned after %v, want 7.2s, without sleeping past the budget", got)
				}
			})
		})
	}
}

func TestNoGoroutineOutlivesACall(t *testing.T) {
	// Besides the check below, synctest.Test fails if any goroutine started
	// in the bubble is still blocked when the function returns; each case
	// ends the call in a different place.
	cases := []struct {
		name string
		post func(http.ResponseWriter, *http.Request, int)
	}{
		{"a JSON answer", nil},
		{"a stream", stream(`progress {"units":1}`, ": ping", `result {"output":1}`)},
		{"a hang cut by the lease", hang},
		{"an error answer", func(w http.ResponseWriter, r *http.Request, n int) {
			writeJSON(w, http.StatusBadGateway, `{"error":{"message":"x"}}`)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := &toolServer{post: tc.post}
				var active atomic.Int64
				h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					active.Add(1)
					defer active.Add(-1)
					s.handler().ServeHTTP(w, r)
				})
				reg := mustRegister(t, Remote(Spec{Name: "t", Effect: Read, Ceiling: time.Second, MaxAttempts: 1, Cancellable: true}, "http://tools.test", memClient(h)))
				res := reg.Call(t.Context(), &Run{Budget: newBudget(t, time.Minute)}, "t", nil)
				synctest.Wait()
				if n := active.Load(); n != 0 || res.Attempts != 1 {
					t.Errorf("%d handlers still running after the call returned (result %+v)", n, res)
				}
			})
		})
	}
}

func TestResolveServerFillsOnlyItsOwnEntriesWithinItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mux := http.NewServeMux()
		mux.HandleFunc("GET /a/tools", func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, http.StatusOK, `{"tools":[{"name":"search","effect":"read","p50_ms":200}]}`)
		})
		mux.HandleFunc("GET /b/tools", func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
		c := &Config{Entries: []Entry{
			{Name: "search", URL: "http://tools.test/a"},
			{Name: "pay", URL: "http://tools.test/b"},
			{Name: "fetch", URL: "http://tools.test/a", Effect: Write},
		}}
		if got := c.Servers(); !slices.Equal(got, []string{"http://tools.test/a", "http://tools.test/b"}) {
			t.Errorf("Servers() = %q, want each server once, in order", got)
		}
		start := time.Now()
		ctx, stop := context.WithTimeout(t.Context(), 2*time.Second)
		defer stop()

		errB := c.ResolveServer(ctx, memClient(mux), "http://tools.test/b")
		errA := c.ResolveServer(t.Context(), memClient(mux), "http://tools.test/a")

		if got := time.Since(start); got != 2*time.Second || !errors.Is(errB, ErrManifest) {
			t.Errorf("the hanging server: %v after %v, want a manifest error when its context ends, at 2s", errB, got)
		}
		if e := c.Entries[0]; e.Effect != Read || e.P50 != 200*time.Millisecond {
			t.Errorf("search %+v, want filled from its manifest", e)
		}
		if e := c.Entries[1]; e.Effect != "" {
			t.Errorf("pay %+v, want untouched: its manifest never came", e)
		}
		if e := c.Entries[2]; e.Effect != Write || !errors.Is(errA, ErrManifest) {
			t.Errorf("fetch %+v (%v), want the entry's own effect, and an error: the manifest does not list it", e, errA)
		}
	})
}

// A server's Retry-After in process, by the call machine's rule, the one
// the Temporal workflow follows too (issue 25): too large to be
// meaningful gives up at once, its cause the budget's; one that fits is a
// floor, spread by the run's source.
func TestARemoteToolsRetryAfterIsAFloorSpreadOrAGiveUp(t *testing.T) {
	cases := []struct {
		name       string
		retryAfter string
		posts      int
		took       func(time.Duration) bool
		reason     string
	}{
		{"a Retry-After too large to be meaningful gives up at once", "999999999", 1,
			func(d time.Duration) bool { return d == 0 }, budget.RetryAfterExceedsBudget},
		{"Retry-After: 1 is retried after 1s and the spread the source drew", "1", 2,
			func(d time.Duration) bool { return d == time.Second+budget.DefaultBase }, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				s := &toolServer{post: func(w http.ResponseWriter, r *http.Request, n int) {
					if n == 1 {
						w.Header().Set("Retry-After", tc.retryAfter)
						writeJSON(w, http.StatusServiceUnavailable, `{"error":{"message":"busy"}}`)
						return
					}
					writeJSON(w, http.StatusOK, `{"output":"ok"}`)
				}}
				spec := Spec{Name: "fetch", Effect: Read, Ceiling: 2 * time.Second}
				reg := mustRegister(t, Remote(spec, "http://tools.test", memClient(s.handler())))
				res := reg.Call(t.Context(), &Run{Budget: newBudget(t, time.Minute), Backoff: budget.Backoff{Rand: maxJitter}}, "fetch", nil)
				if got := time.Since(start); !tc.took(got) {
					t.Errorf("returned after %v", got)
				}
				if posts, _, _ := s.got(); len(posts) != tc.posts {
					t.Errorf("%d POSTs, want %d", len(posts), tc.posts)
				}
				gaveUp, ok := errors.AsType[*trace.GaveUpError](res.Cause)
				if tc.reason != "" && (!ok || gaveUp.Delay.Reason != tc.reason) {
					t.Errorf("cause %v, want a give-up with %s", res.Cause, tc.reason)
				}
				if tc.reason == "" && res.Outcome != trace.OK {
					t.Errorf("outcome %s: %s", res.Outcome, res.Err)
				}
			})
		})
	}
}
