package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/cancel"
	"github.com/glidepath/glidepath/tools"
)

// ledger is a payment service as a tool of one's own would reach it: a
// payment commits the moment it arrives, whatever becomes of the answer.
type ledger struct {
	mu       sync.Mutex
	paid     map[cancel.Key]int // payments made, by key
	cancels  []cancel.Key
	statuses int
}

func (l *ledger) pay(key cancel.Key) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.paid[key]++
}

func (l *ledger) payments() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, c := range l.paid {
		n += c
	}
	return n
}

// payTool is the custom write: it commits, then its answer is cut
// at the 500ms lease and it returns what a tool writer writes first,
// Answer{Err: cause}, saying nothing of whether the call was sent.
type payTool struct {
	spec tools.Spec
	l    *ledger
}

func (p *payTool) Spec() tools.Spec { return p.spec }

func (p *payTool) Attempt(ctx context.Context, call *tools.Call) tools.Answer {
	p.l.pay(call.Key)
	<-ctx.Done()
	return tools.Answer{Err: context.Cause(ctx)}
}

// askablePay is payTool with a way to ask the ledger how a call went.
type askablePay struct{ payTool }

func (p *askablePay) Status(_ context.Context, key cancel.Key) (cancel.Status, error) {
	p.l.mu.Lock()
	defer p.l.mu.Unlock()
	p.l.statuses++
	if p.l.paid[key] == 0 {
		return cancel.Status{State: cancel.NeverReceived}, nil
	}
	return cancel.Status{State: cancel.Done, Output: json.RawMessage(`"paid"`)}, nil
}

// cancellablePay is payTool that can stop a call by its key, with a spec
// that never says so.
type cancellablePay struct{ payTool }

func (p *cancellablePay) Cancel(_ context.Context, key cancel.Key) error {
	p.l.mu.Lock()
	defer p.l.mu.Unlock()
	p.l.cancels = append(p.l.cancels, key)
	return nil
}

func paySpec() tools.Spec {
	return tools.Spec{Name: "pay", Effect: tools.Write, Ceiling: 500 * time.Millisecond}
}

func TestACutWriteThatSaysNothingIsNeverCalledFailed(t *testing.T) {
	cases := []struct {
		name       string
		tool       func(*ledger) tools.Tool
		wantState  tools.State
		wantOutput string
		wantAsks   int
	}{
		{"a tool that can be asked is reconciled by its key",
			func(l *ledger) tools.Tool { return &askablePay{payTool{paySpec(), l}} }, "", `"paid"`, 1},
		{"a tool that cannot be asked is an orphan, journaled with its key",
			func(l *ledger) tools.Tool { return &payTool{paySpec(), l} }, tools.StateOrphaned, "", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := &ledger{paid: map[cancel.Key]int{}}
				reg := tools.NewRegistry(nil)
				if err := reg.Register(tc.tool(l)); err != nil {
					t.Fatal(err)
				}
				path := filepath.Join(t.TempDir(), "orphans.jsonl")
				j, err := cancel.OpenJournal(path)
				if err != nil {
					t.Fatal(err)
				}
				defer j.Close()
				b, err := budget.New(budget.Config{Total: time.Minute})
				if err != nil {
					t.Fatal(err)
				}
				start := time.Now()
				res := reg.Call(t.Context(), &tools.Run{ID: "run-1", Budget: b, Journal: j}, "pay", nil)

				if got := time.Since(start); got != 500*time.Millisecond {
					t.Errorf("the call took %v, want its 500ms lease", got)
				}
				if strings.Contains(res.Err, "failed") {
					t.Errorf("the model reads %q: a write that may have committed is never called failed", res.Err)
				}
				if res.State != tc.wantState || string(res.Output) != tc.wantOutput || res.Attempts != 1 {
					t.Errorf("result %+v, want state %q, output %s, one attempt", res, tc.wantState, tc.wantOutput)
				}
				if n := l.payments(); n != 1 {
					t.Errorf("%d payments, want 1: a cut write is never sent again", n)
				}
				if l.statuses != tc.wantAsks {
					t.Errorf("%d status asks, want %d", l.statuses, tc.wantAsks)
				}
				entries, err := cancel.ReadJournal(path)
				if err != nil {
					t.Fatal(err)
				}
				if tc.wantState != tools.StateOrphaned {
					if len(entries) != 0 {
						t.Errorf("journal %+v, want nothing: the call settled", entries)
					}
					return
				}
				if len(entries) != 1 || entries[0].IdempotencyKey != res.Key || entries[0].Tool != "pay" ||
					entries[0].Kind != "tool:pay" || entries[0].State != cancel.Open {
					t.Fatalf("journal %+v, want one open entry for key %s of kind tool:pay", entries, res.Key)
				}
				if !strings.Contains(res.Err, "recorded for reconciliation under key "+string(res.Key)) {
					t.Errorf("the model reads %q, want it told the write is recorded, with its key", res.Err)
				}
			})
		})
	}
}

func TestAToolThatCanCancelIsCancelledWithoutItsSpecSayingSo(t *testing.T) {
	cases := []struct {
		name        string
		spec        func(tools.Spec) tools.Spec
		wantCancels int
	}{
		{"a Canceller with no word in its spec is cancelled when its lease ends", func(s tools.Spec) tools.Spec { return s }, 1},
		{"a spec may turn cancelling off", func(s tools.Spec) tools.Spec { s.NotCancellable = true; return s }, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := &ledger{paid: map[cancel.Key]int{}}
				reg := tools.NewRegistry(nil)
				if err := reg.Register(&cancellablePay{payTool{tc.spec(paySpec()), l}}); err != nil {
					t.Fatal(err)
				}
				if got := reg.Specs()[0].Cancellable; got != (tc.wantCancels == 1) {
					t.Errorf("Specs says Cancellable %v, want it as it is used", got)
				}
				b, err := budget.New(budget.Config{Total: time.Minute})
				if err != nil {
					t.Fatal(err)
				}
				start := time.Now()
				res := reg.Call(t.Context(), &tools.Run{Budget: b}, "pay", nil)
				if len(l.cancels) != tc.wantCancels {
					t.Fatalf("%d cancels, want %d", len(l.cancels), tc.wantCancels)
				}
				if tc.wantCancels == 1 && (l.cancels[0] != res.Key || time.Since(start) != 500*time.Millisecond) {
					t.Errorf("cancelled %s after %v, want key %s at the 500ms lease", l.cancels[0], time.Since(start), res.Key)
				}
				if strings.Contains(res.Err, "could not be cancelled") {
					t.Errorf("the model reads %q", res.Err)
				}
			})
		})
	}
}

func TestRegisterRefusesASpecThatClaimsWhatItsTypeCannotDo(t *testing.T) {
	l := &ledger{paid: map[cancel.Key]int{}}
	claim := paySpec()
	claim.Cancellable = true
	both := claim
	both.NotCancellable = true
	cases := []struct {
		name    string
		tool    tools.Tool
		wantErr error // nil: registered
	}{
		{"Cancellable on a type that is not a Canceller", &payTool{claim, l}, tools.ErrNoCapability},
		{"Cancellable and NotCancellable at once", &cancellablePay{payTool{both, l}}, tools.ErrBadSpec},
		{"Cancellable on a Canceller", &cancellablePay{payTool{claim, l}}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tools.NewRegistry(nil).Register(tc.tool)
			if tc.wantErr == nil {
				if err != nil {
					t.Fatalf("Register = %v, want it registered", err)
				}
				return
			}
			se, ok := errors.AsType[*tools.SpecError](err)
			if !errors.Is(err, tc.wantErr) || !errors.Is(err, tools.ErrBadSpec) || !ok || se.Field != "cancellable" {
				t.Errorf("Register = %v, want a *SpecError of field cancellable matching %v", err, tc.wantErr)
			}
		})
	}
}

func TestTheModelIsToldRecordedOnlyWhenTheJournalHoldsIt(t *testing.T) {
	closed := func(t *testing.T) *cancel.Journal {
		j, err := cancel.OpenJournal(filepath.Join(t.TempDir(), "orphans.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		j.Close() // an append now fails
		return j
	}
	cases := []struct {
		name    string
		journal func(*testing.T) *cancel.Journal
		want    string
	}{
		{"no journal configured", func(*testing.T) *cancel.Journal { return nil }, "NOT recorded for reconciliation (no orphan journal is configured)"},
		{"a journal that cannot be written", closed, "NOT recorded for reconciliation (the orphan journal could not be written)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := &ledger{paid: map[cancel.Key]int{}}
				reg := tools.NewRegistry(nil)
				if err := reg.Register(&payTool{paySpec(), l}); err != nil {
					t.Fatal(err)
				}
				b, err := budget.New(budget.Config{Total: time.Minute})
				if err != nil {
					t.Fatal(err)
				}
				res := reg.Call(t.Context(), &tools.Run{Budget: b, Journal: tc.journal(t)}, "pay", nil)
				oe, ok := errors.AsType[*tools.OrphanError](res.Cause)
				if res.State != tools.StateOrphaned || !ok || oe.Journaled {
					t.Fatalf("result %+v, want an orphan not journaled", res)
				}
				if !strings.Contains(res.Err, tc.want) || strings.Contains(res.Err, "is recorded") ||
					!strings.Contains(res.Err, "do not repeat it") || !strings.Contains(res.Err, string(res.Key)) {
					t.Errorf("the model reads %q, want %q, not to repeat it, and the key", res.Err, tc.want)
				}
			})
		})
	}
}

func TestTheZeroValuesOfWhatAUserHoldsDoNotPanic(t *testing.T) {
	t.Run("a zero Call drives a tool's Attempt directly", func(t *testing.T) {
		var c tools.Call
		c.Progress(1, 2, "half")
		c.Keepalive()
		c.Pause()()
	})
	t.Run("a call with no run or no budget starts nothing and says why", func(t *testing.T) {
		l := &ledger{paid: map[cancel.Key]int{}}
		var reg tools.Registry
		if err := reg.Register(&payTool{paySpec(), l}); err != nil {
			t.Fatal(err)
		}
		for _, run := range []*tools.Run{nil, {}} {
			res := reg.Call(t.Context(), run, "pay", nil)
			if !errors.Is(res.Cause, tools.ErrNoBudget) || res.Err == "" || res.Attempts != 0 || l.payments() != 0 {
				t.Errorf("Call(%v) = %+v, want ErrNoBudget and nothing sent", run, res)
			}
		}
	})
}
