package watchdog_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/watchdog"
)

func Example() {
	b, err := budget.New(budget.Config{Total: 2 * time.Minute})
	if err != nil {
		panic(err)
	}
	w, ctx, err := watchdog.Start(context.Background(), watchdog.Config{
		Quiet:      60 * time.Second,
		QuietAfter: map[watchdog.Event]time.Duration{watchdog.ModelCall: 3 * time.Minute},
		Wall:       b.Deadline(),
	})
	if err != nil {
		panic(err)
	}
	defer w.Stop()

	w.Mark(watchdog.ToolCall)
	fmt.Println(w.Progress("key-1", 3)) // the call's units went up
	fmt.Println(w.Progress("key-1", 3)) // a repeat: counted, resets nothing
	w.Keepalive()
	w.Token(12)
	w.Mark(watchdog.ToolResult)
	w.End("key-1")

	s := w.Snapshot()
	fmt.Println("last:", s.Last)
	fmt.Println("semantic:", s.Semantic, "keepalives:", s.Counts[watchdog.Keepalive],
		"tokens:", s.Counts[watchdog.Token], "stale:", s.Counts[watchdog.StaleProgress])
	fmt.Println("run live:", ctx.Err() == nil)
	// Output:
	// true
	// false
	// last: tool_result
	// semantic: 3 keepalives: 1 tokens: 12 stale: 1
	// run live: true
}

// A run whose wall has already passed ends at once.
func Example_wall() {
	w, ctx, err := watchdog.Start(context.Background(), watchdog.Config{
		Wall: time.Now().Add(-time.Second),
	})
	if err != nil {
		panic(err)
	}
	defer w.Stop()
	<-ctx.Done()
	fmt.Println(context.Cause(ctx))
	fmt.Println(ctx.Err())
	// Output:
	// watchdog: wall reached
	// context deadline exceeded
}

// Keepalives keep a connection open, not a run alive: the quiet clock fires
// and the cause reports the stall.
func Example_stall() {
	w, ctx, err := watchdog.Start(context.Background(), watchdog.Config{Quiet: time.Millisecond})
	if err != nil {
		panic(err)
	}
	defer w.Stop()
	w.Keepalive()
	<-ctx.Done()
	cause := context.Cause(ctx)
	fmt.Println(errors.Is(cause, watchdog.ErrQuiet))
	if stall, ok := errors.AsType[*watchdog.StallError](cause); ok {
		fmt.Println("last semantic event:", stall.Last, "quiet:", stall.Quiet)
	}
	// Output:
	// true
	// last semantic event: none quiet: 1ms
}

func ExampleWatchdog_Stop() {
	w, ctx, err := watchdog.Start(context.Background(), watchdog.Config{})
	if err != nil {
		panic(err)
	}
	w.Mark(watchdog.ModelCall)
	w.Stop()
	fmt.Println(context.Cause(ctx))
	// Output: watchdog: stopped
}

func ExampleConfig_Validate() {
	cfg := watchdog.Config{QuietAfter: map[watchdog.Event]time.Duration{watchdog.Keepalive: time.Minute}}
	err := cfg.Validate()
	fmt.Println(err)
	if ce, ok := errors.AsType[*watchdog.ConfigError](err); ok {
		fmt.Println("field:", ce.Field)
	}
	// Output:
	// watchdog: quiet_after[keepalive] 1m0s: not a semantic event, so it opens no quiet window
	// field: quiet_after[keepalive]
}

// A host of the quiet clock tells it what happened, with the time, and
// arms one timer for its next wake-up: here, a pause with an event inside
// it.
func ExampleClock() {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return start.Add(time.Duration(s * float64(time.Second))) }
	c, err := watchdog.NewClock(watchdog.Config{Quiet: 4 * time.Second}, start)
	if err != nil {
		panic(err)
	}
	c.Pause(at(3.5))                      // 0.5s of quiet left
	c.Heard(watchdog.ToolResult, at(3.6)) // its window ends at 7.6s
	c.Resume(at(6.6))                     // 6.6s + 0.5s left is earlier
	next, ok := c.Next()
	fmt.Println("wake at:", next.Sub(start), ok)
	if stall, fired := c.Fire(next); fired {
		fmt.Println("stalled:", stall.Last, "was", stall.Since, "ago")
	}
	// Output:
	// wake at: 7.6s true
	// stalled: tool_result was 4s ago
}
