package sim

import (
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// post sends one small chat completion request and returns its status and
// Retry-After header.
func post(t *testing.T, srv *Server) (int, string) {
	t.Helper()
	res, err := srv.Client().Post(srv.URL+"/chat/completions", "application/json",
		strings.NewReader(`{"model":"sim","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode, res.Header.Get("Retry-After")
}

func TestAWindowMatchesTheRequestsThatArriveInsideIt(t *testing.T) {
	type step struct {
		at   time.Duration // since the first chat completion request was sent
		want int
	}
	cases := []struct {
		name   string
		rules  []Rule
		models bool // list the models before the idle time and the first chat request
		steps  []step
	}{
		{"an outage in the first 300ms, counted from the first request",
			[]Rule{{For: 300 * time.Millisecond, Status: 503, RetryAfter: "1"}}, false,
			[]step{{0, 503}, {299 * time.Millisecond, 503}, {300 * time.Millisecond, 200}, {time.Second, 200}}},
		{"a window that opens later",
			[]Rule{{After: 100 * time.Millisecond, For: 200 * time.Millisecond, Status: 503, RetryAfter: "1"}}, false,
			[]step{{0, 200}, {99 * time.Millisecond, 200}, {100 * time.Millisecond, 503}, {299 * time.Millisecond, 503}, {300 * time.Millisecond, 200}}},
		{"a window without an end",
			[]Rule{{After: time.Second, Status: 500}}, false,
			[]step{{0, 200}, {999 * time.Millisecond, 200}, {time.Second, 500}, {time.Hour, 500}}},
		{"a window and a request number must both match",
			[]Rule{{For: time.Second, Request: 2, Status: 503}}, false,
			[]step{{0, 200}, {10 * time.Millisecond, 503}, {2 * time.Second, 200}}},
		{"a window is used up by times",
			[]Rule{{For: time.Second, Times: 1, Status: 503}}, false,
			[]step{{0, 503}, {10 * time.Millisecond, 200}}},
		{"a request after the window falls through to the next rule",
			[]Rule{{For: 300 * time.Millisecond, Status: 503}, {Status: 429}}, false,
			[]step{{0, 503}, {300 * time.Millisecond, 429}}},
		{"listing the models does not start the clock",
			[]Rule{{For: 300 * time.Millisecond, Status: 503}}, true,
			[]step{{0, 503}, {300 * time.Millisecond, 200}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := NewPipeServer(&Scenario{Rules: tc.rules})
				defer srv.Close()
				if tc.models {
					res, err := srv.Client().Get(srv.URL + "/models")
					if err != nil {
						t.Fatal(err)
					}
					res.Body.Close()
				}
				// The server sits idle first: its start is not the window's.
				time.Sleep(5 * time.Second)
				start := time.Now()
				var got, want []int
				var at []time.Duration
				for _, s := range tc.steps {
					time.Sleep(s.at - time.Since(start))
					status, retryAfter := post(t, srv)
					got, want = append(got, status), append(want, s.want)
					at = append(at, s.at)
					if status == 503 && tc.rules[0].RetryAfter != "" && retryAfter != tc.rules[0].RetryAfter {
						t.Errorf("at %v: Retry-After %q, want %q", s.at, retryAfter, tc.rules[0].RetryAfter)
					}
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("statuses %v at %v, want %v", got, at, want)
				}
				var recorded []time.Duration
				for _, r := range srv.Requests() {
					if r.Completion > 0 {
						recorded = append(recorded, r.At)
					}
				}
				if !reflect.DeepEqual(recorded, at) {
					t.Errorf("recorded arrivals %v, want %v", recorded, at)
				}
			})
		})
	}
}

func TestEveryRequestOfABurstInsideTheWindowGets503ThenItsRetryAnswers(t *testing.T) {
	// The fleet benchmark in small: runs that start together on one shared
	// sim all meet the outage, and all get through once they wait as told.
	synctest.Test(t, func(t *testing.T) {
		srv := NewPipeServer(&Scenario{Rules: []Rule{{For: 300 * time.Millisecond, Status: 503, RetryAfter: "1"}}})
		defer srv.Close()
		const runs = 200
		var mu sync.Mutex
		outcomes := map[string]int{}
		var wg sync.WaitGroup
		for range runs {
			wg.Go(func() {
				first, retryAfter := post(t, srv)
				time.Sleep(time.Second) // as Retry-After: 1 says
				second, _ := post(t, srv)
				mu.Lock()
				defer mu.Unlock()
				outcomes[fmt.Sprintf("%d retry-after %q, then %d", first, retryAfter, second)]++
			})
		}
		wg.Wait()
		if want := map[string]int{`503 retry-after "1", then 200`: runs}; !reflect.DeepEqual(outcomes, want) {
			t.Errorf("outcomes %v, want %v", outcomes, want)
		}
		if got := srv.Received(); got != 2*runs {
			t.Errorf("received %d requests, want %d", got, 2*runs)
		}
	})
}

func TestAWindowIsHalfOpenAndCannotOverflow(t *testing.T) {
	cases := []struct {
		name string
		rule Rule
		at   time.Duration
		want bool
	}{
		{"no window matches at 0", Rule{}, 0, true},
		{"no window matches any time", Rule{}, Forever, true},
		{"the start is inside", Rule{After: time.Second, For: time.Second}, time.Second, true},
		{"just before the end is inside", Rule{After: time.Second, For: time.Second}, 2*time.Second - 1, true},
		{"the end is outside", Rule{After: time.Second, For: time.Second}, 2 * time.Second, false},
		{"before the start is outside", Rule{After: time.Second, For: time.Second}, time.Second - 1, false},
		{"no end reaches the end of time", Rule{After: time.Second}, Forever, true},
		{"a window past the end of time does not wrap", Rule{After: Forever - 1, For: Forever}, Forever, true},
		{"nor does it match early", Rule{After: Forever - 1, For: Forever}, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.rule.inWindow(tc.at); got != tc.want {
				t.Errorf("inWindow(%v) = %t, want %t", tc.at, got, tc.want)
			}
		})
	}
}

// A request that reaches the handler early but is numbered after the
// first one must not land before the clock starts; admit is driven
// directly because only a race of real goroutines could order them so.
func TestARequestNumberedAfterTheFirstButStampedEarlierIsAtZero(t *testing.T) {
	h := newHandler(&Scenario{Rules: []Rule{{After: time.Millisecond, Status: 503}}}, true, nil, nil)
	now := time.Now()
	first := Request{Time: now}
	early := Request{Time: now.Add(-time.Second)}
	h.admit(&first, true, true)
	if rule := h.admit(&early, true, true); rule.Status != 0 || early.At != 0 {
		t.Errorf("an early request got status %d at %v, want no rule at 0", rule.Status, early.At)
	}
}
