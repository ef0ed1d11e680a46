package tools_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/glidepath/glidepath/tools"
	"github.com/glidepath/glidepath/trace"
	"github.com/glidepath/glidepath/watchdog"
)

// A Call no Registry made — a durable run's activity builds one — hands
// what its attempt hears to its Heard, with the call's key, so that a run
// in another process can feed its quiet clock.
func TestACallNoRegistryMadeHandsWhatItHearsToHeard(t *testing.T) {
	var heard []trace.Signal
	fn := tools.Func(tools.Spec{Name: "slow", Effect: tools.Read}, func(ctx context.Context, args json.RawMessage, p tools.Progress) (any, error) {
		p.Report(1, 3, "one")
		p.Report(2, 3, "two")
		return "done", nil
	})
	call := &tools.Call{Key: "key-1", Heard: func(s trace.Signal) { heard = append(heard, s) }}
	call.Keepalive()
	ans := fn.Attempt(t.Context(), call)
	if ans.Err != nil {
		t.Fatal(ans.Err)
	}
	want := []trace.Signal{
		{Event: watchdog.Keepalive, Key: "key-1"},
		{Event: watchdog.Progress, Key: "key-1", Units: 1, Total: 3, Message: "one"},
		{Event: watchdog.Progress, Key: "key-1", Units: 2, Total: 3, Message: "two"},
	}
	if len(heard) != len(want) {
		t.Fatalf("heard %+v, want %+v", heard, want)
	}
	for i := range want {
		if heard[i] != want[i] {
			t.Errorf("signal %d: %+v, want %+v", i, heard[i], want[i])
		}
	}
	// The zero Call still drops what it hears.
	var zero tools.Call
	zero.Progress(1, 0, "")
	zero.Keepalive()
}
