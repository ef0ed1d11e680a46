package budget_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/glidepath/glidepath/budget"
)

// A run with 90s available after its reserve asks for leases under a few
// ceilings and p50s: the smaller of ceiling and available − floor is
// granted, unless that is below the step's p50.
func ExampleGrant() {
	const available, floor = 90 * time.Second, 50 * time.Millisecond
	for _, c := range []struct{ ceiling, p50 time.Duration }{
		{30 * time.Second, 0},              // the ceiling binds
		{0, 0},                             // no ceiling: the budget binds
		{2 * time.Second, 5 * time.Second}, // a grant the call would likely waste
		{5 * time.Minute, 800 * time.Millisecond}, // a ceiling beyond the budget
	} {
		granted, capped, refused := budget.Grant(available, floor, c.ceiling, c.p50)
		if refused != 0 {
			fmt.Printf("ceiling %v, p50 %v: refused, %v (%v)\n", c.ceiling, c.p50, refused, granted)
			continue
		}
		fmt.Printf("ceiling %v, p50 %v: %v, capped %v\n", c.ceiling, c.p50, granted, capped)
	}
	_, _, refused := budget.Grant(40*time.Millisecond, floor, 0, 0)
	fmt.Println("40ms available:", refused)
	// Output:
	// ceiling 30s, p50 0s: 30s, capped true
	// ceiling 0s, p50 0s: 1m29.95s, capped false
	// ceiling 2s, p50 5s: refused, below p50 (2s)
	// ceiling 5m0s, p50 800ms: 1m29.95s, capped false
	// 40ms available: below floor
}

// Before a retry sleeps, the sleep is checked against the budget: a retry
// that could not get a lease after its sleep gives up now, without sleeping.
func ExampleDecide() {
	const available, floor = 10 * time.Second, 50 * time.Millisecond
	for _, c := range []struct {
		sleep time.Duration
		src   budget.Source
	}{
		{1200 * time.Millisecond, budget.FromJitter},
		{30 * time.Second, budget.FromRetryAfter}, // the server asked for more than is left
		{9950 * time.Millisecond, budget.FromJitter},
	} {
		d := budget.Decide(c.sleep, c.src, available, floor)
		if d.GiveUp {
			fmt.Printf("%v from %v: give up, %s\n", d.Sleep, d.Source, d.Reason)
			continue
		}
		fmt.Printf("%v from %v: sleep\n", d.Sleep, d.Source)
	}
	// Output:
	// 1.2s from jitter: sleep
	// 30s from retry_after: give up, retry_after_exceeds_budget
	// 9.95s from jitter: give up, backoff_exceeds_budget
}

func ExampleDefaultReserve() {
	for _, total := range []time.Duration{10 * time.Second, 2 * time.Minute, 10 * time.Minute} {
		fmt.Printf("%v keeps %v\n", total, budget.DefaultReserve(total))
	}
	// Output:
	// 10s keeps 2.5s
	// 2m0s keeps 20s
	// 10m0s keeps 1m0s
}

func ExampleParseRemaining() {
	for _, v := range []string{"1500", " 250 ", "-5", "1.5", "99999999999999"} {
		d, err := budget.ParseRemaining(v)
		if err != nil {
			fmt.Println(errors.Is(err, budget.ErrBadHeader), err)
			continue
		}
		fmt.Println(d)
	}
	// The sender rounds down, so the receiver is never promised more.
	fmt.Println(budget.FormatRemaining(1999 * time.Microsecond))
	// Output:
	// 1.5s
	// 250ms
	// true budget: bad Budget-Remaining-Ms "-5": negative
	// true budget: bad Budget-Remaining-Ms "1.5": not an integer
	// true budget: bad Budget-Remaining-Ms "99999999999999": larger than a year
	// 1
}

func ExampleParseRetryAfter() {
	now := time.Date(2025, time.June, 1, 12, 0, 0, 0, time.UTC)
	for _, h := range []http.Header{
		{"Retry-After-Ms": {"1500.5"}, "Retry-After": {"2"}}, // the milliseconds win
		{"Retry-After": {"120"}},
		{"Retry-After": {"Sun, 01 Jun 2025 12:00:30 GMT"}}, // an HTTP-date, measured against now
		{"Retry-After": {"Sun, 06 Nov 1994 08:49:37 GMT"}}, // in the past: no delay
		{"Retry-After": {"99999999"}},                      // more than MaxRetryAfter
		{},
	} {
		d, ok, err := budget.ParseRetryAfter(h, now)
		switch {
		case err != nil:
			fmt.Println(errors.Is(err, budget.ErrBadRetryAfter), err)
		case !ok:
			fmt.Println("no retry-after")
		default:
			fmt.Println(d)
		}
	}
	// Output:
	// 1.5005s
	// 2m0s
	// 30s
	// 0s
	// true budget: bad Retry-After "99999999": longer than MaxRetryAfter
	// no retry-after
}

func ExampleBackoff_Ceiling() {
	var bo budget.Backoff // the defaults: base 250ms, cap 8s
	for n := 1; n <= 7; n++ {
		fmt.Printf("retry %d sleeps up to %v\n", n, bo.Ceiling(n))
	}
	// Output:
	// retry 1 sleeps up to 250ms
	// retry 2 sleeps up to 500ms
	// retry 3 sleeps up to 1s
	// retry 4 sleeps up to 2s
	// retry 5 sleeps up to 4s
	// retry 6 sleeps up to 8s
	// retry 7 sleeps up to 8s
}

// A Backoff with a fixed Rand shows both ends of full jitter's range.
func ExampleBackoff_Jitter() {
	lowest := budget.Backoff{Rand: func(n int64) int64 { return 0 }}
	highest := budget.Backoff{Rand: func(n int64) int64 { return n - 1 }}
	fmt.Println(lowest.Jitter(3), highest.Jitter(3))
	// Output:
	// 0s 1s
}

// A run of two minutes keeps 20s in reserve. A call under a 10s ceiling
// gets exactly the ceiling; a tool whose p50 is longer than its ceiling
// is refused before any I/O.
func ExampleBudget_Lease() {
	run, err := budget.New(budget.Config{Total: 2 * time.Minute})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("reserve", run.Reserve())

	model := run.Estimates().Kind("model")
	l, err := run.Lease(model, 10*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("granted", l.Granted, "capped", l.Capped, "header", l.Millis())

	ctx, cancel := l.Context(context.Background())
	defer cancel()
	deadline, _ := ctx.Deadline()
	fmt.Println("context ends with the lease:", deadline.Equal(l.Deadline))

	search := run.Estimates().Kind("tool:search")
	search.Declare(30*time.Second, time.Minute)
	_, err = run.Lease(search, 10*time.Second)
	fmt.Println(errors.Is(err, budget.ErrRefused), err)
	// Output:
	// reserve 20s
	// granted 10s capped true header 10000
	// context ends with the lease: true
	// true budget: refused tool:search: 10s left, below p50 30s
}

// A piece of a run's setup gets a quarter of the run's work time, at most
// 5s, unless it asks for its own ceiling.
func ExampleSetupCeiling() {
	fmt.Println(budget.SetupCeiling(4500*time.Millisecond, 0)) // a 6s run: B − R = 4.5s
	fmt.Println(budget.SetupCeiling(100*time.Second, 0))       // a 2m run
	fmt.Println(budget.SetupCeiling(4500*time.Millisecond, 30*time.Second))
	// Output:
	// 1.125s
	// 5s
	// 30s
}
