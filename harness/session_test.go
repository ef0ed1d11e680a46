package harness_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/harness"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/sim"
	"github.com/glidepath/glidepath/tools"
	"github.com/glidepath/glidepath/trace"
)

// B = 5s: R = 1.25s, F = 50ms. The tool's POST gets the work time, 3.7s;
// its cancel, sent then, a landing lease of what is left, 1.25s; the
// landing call is made meanwhile, and once the run has its summary the
// cancel gets its grace, 100ms, and no more (SPEC §3: cancels never hold
// the answer): the run returns at 3.8s with the cancel on record as sent,
// unanswered.
func TestAHungCancelEndpointCostsTheLandingNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := sim.NewPipeServer(nil)
		defer srv.Close()
		var mu sync.Mutex
		var deletes []time.Duration
		start := time.Now()
		mux := http.NewServeMux()
		mux.HandleFunc("POST /tools/crawl", func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body) // then the server watches the connection, and sees the client leave
			<-r.Context().Done()
		})
		mux.HandleFunc("DELETE /tools/crawl/calls/{key}", func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			deletes = append(deletes, time.Since(start))
			mu.Unlock()
			<-r.Context().Done()
		})
		tool := serveHandler(mux)
		defer tool.close()
		reg := registry(t, tools.Remote(tools.Spec{Name: "crawl", Effect: tools.Read, Cancellable: true, MaxAttempts: 1},
			"http://tools.invalid", tool.client()))
		var tr bytes.Buffer

		res, err := run(t, t.Context(), 5*time.Second, harness.Config{Task: "find cats", Model: newModel(t, srv), Tools: reg}, &tr)

		if err != nil {
			t.Fatal(err)
		}
		if got := time.Since(start); got != 3800*time.Millisecond {
			t.Errorf("returned after %v, want 3.8s: the landing, then the cancel's grace of 100ms", got)
		}
		reqs := chatRequests(srv)
		if len(reqs) != 2 || reqs[1].HasTools {
			t.Fatalf("%d model requests; want the turn and the landing call, which offers no tools", len(reqs))
		}
		if at := reqs[1].Time.Sub(start); at != 3700*time.Millisecond {
			t.Errorf("the landing call was sent at %v, want 3.7s: right after the cut, not after the cancel", at)
		}
		if res.Cause != landing.CauseBudget || !strings.HasPrefix(res.Answer, "[sim] Summary") {
			t.Errorf("cause %s, answer %q; want budget, and the model's summary", res.Cause, res.Answer)
		}
		if len(res.InFlight) != 1 || res.InFlight[0].State != landing.StateAbandoned {
			t.Errorf("in flight %+v, want crawl abandoned: its cancel was never answered", res.InFlight)
		}
		mu.Lock()
		if len(deletes) != 1 || deletes[0] != 3700*time.Millisecond {
			t.Errorf("DELETEs at %v, want one at 3.7s", deletes)
		}
		mu.Unlock()

		recs := records(t, &tr)
		cs := only(recs, trace.CancelSent, "tool:crawl")
		if len(cs) != 1 || cs[0].State != "sent" || cs[0].ElapsedMs != 3700 || cs[0].GrantedMs != 1250 {
			t.Errorf("cancel_sent records %+v; want one, sent at 3.7s on 1250ms, never answered", cs)
		}
		if l := only(recs, trace.Landing, ""); len(l) != 1 || l[0].Result != "model" || l[0].ElapsedMs != 3700 {
			t.Errorf("landing records %+v, want the model's, at 3.7s", l)
		}
		if end := recs[len(recs)-1]; end.Event != trace.RunEnd || end.ElapsedMs != 3800 {
			t.Errorf("last record %+v, want run_end at 3.8s", end)
		}
	})
}

// B = 10s: narrow at 6s, land at 7.5s. A tool reports progress every
// second until its lease, the work time of 7.45s, cuts it; the run then
// lands, forced, at 7.45s.
func TestEveryRecordCarriesThePhaseOfItsInstant(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := sim.NewPipeServer(nil)
		defer srv.Close()
		crawl := tools.Func(tools.Spec{Name: "crawl", Effect: tools.Read, MaxAttempts: 1},
			func(ctx context.Context, _ json.RawMessage, p tools.Progress) (any, error) {
				for i := int64(1); ; i++ {
					select {
					case <-time.After(time.Second):
						p.Report(i, 0, "page")
					case <-ctx.Done():
						return nil, context.Cause(ctx)
					}
				}
			})
		var tr bytes.Buffer

		res, err := run(t, t.Context(), 10*time.Second, harness.Config{Task: "find cats", Quiet: time.Hour,
			Model: newModel(t, srv), Tools: registry(t, crawl)}, &tr)

		if err != nil || res.Cause != landing.CauseBudget {
			t.Fatalf("result %+v, %v; want landed on the budget", res, err)
		}
		recs := records(t, &tr)
		if n := len(only(recs, trace.Progress, "tool:crawl")); n != 7 {
			t.Errorf("%d progress records, want 7, one a second", n)
		}
		forced := false
		var changes []string
		for _, r := range recs {
			if r.Event == trace.PhaseChange {
				changes = append(changes, r.To)
				forced = forced || r.Reason == "forced"
			}
			want := landing.PhaseAt(time.Duration(r.ElapsedMs)*time.Millisecond, 10*time.Second, 2500*time.Millisecond)
			if forced {
				want = landing.Land
			}
			if r.Phase != want.String() {
				t.Errorf("record %d (%s at %dms) says %s, want %s", r.Seq, r.Event, r.ElapsedMs, r.Phase, want)
			}
		}
		if want := []string{"narrow", "land"}; strings.Join(changes, ",") != strings.Join(want, ",") || !forced {
			t.Errorf("phase changes %v (forced %v), want narrow at 6s, then land forced", changes, forced)
		}
		if ph := only(recs, trace.PhaseChange, ""); len(ph) != 2 || ph[0].ElapsedMs != 6000 || ph[1].ElapsedMs != 7450 {
			t.Errorf("phase records %+v, want narrow at 6s and land at 7.45s", ph)
		}
	})
}

// The caller's context ends at 5s, the budget at 20s: the run's budget is
// 5s, its reserve 1.25s, and it lands on the budget with the model's
// summary, not cancelled by the caller's deadline.
func TestARunUnderAShorterCallerDeadlineLandsInsideIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// The first request asks for a wait longer than the budget: the
		// run lands on the budget at once, and the harness summarizes: a
		// server that asked for a wait the run cannot afford is not sent
		// the landing call either (landing.ModelEnd, issue 25, item 6).
		srv := sim.NewPipeServer(&sim.Scenario{Rules: []sim.Rule{{Request: 1, Status: 503, RetryAfter: "60"}}})
		defer srv.Close()
		ctx, stop := context.WithTimeout(t.Context(), 5*time.Second)
		defer stop()
		var tr bytes.Buffer
		start := time.Now()

		res, err := run(t, ctx, 20*time.Second, harness.Config{Task: "find cats", Quiet: time.Hour, Model: newModel(t, srv)}, &tr)

		if err != nil {
			t.Fatal(err)
		}
		if res.Status != landing.Partial || res.Cause != landing.CauseBudget || !strings.Contains(res.Answer, "summarized by the harness") {
			t.Errorf("result %s, cause %s, answer %q; want partial on the budget with the harness's summary", res.Status, res.Cause, res.Answer)
		}
		if n := len(chatRequests(srv)); n != 1 {
			t.Errorf("%d chat requests, want 1: no landing call to a server whose wait the run cannot afford", n)
		}
		if res.Budget.TotalMs != 5000 || res.Budget.ReserveMs != 1250 {
			t.Errorf("budget %+v, want total 5s and its reserve 1.25s", res.Budget)
		}
		if got := time.Since(start); got > 5*time.Second {
			t.Errorf("returned after %v, past the caller's deadline", got)
		}
		recs := records(t, &tr)
		if recs[0].TotalMs != 5000 {
			t.Errorf("run_start total_ms %d, want 5000", recs[0].TotalMs)
		}
		if starts := only(recs, trace.AttemptStart, "model"); len(starts) < 1 || starts[0].GrantedMs != 3700 {
			t.Errorf("model attempts %+v, want the first leased 5s − 1.25s − 50ms", starts)
		}
	})
}

func TestSetupIsSpentFromTheRunsBudgetAndRecorded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := sim.NewPipeServer(nil)
		defer srv.Close()
		b, err := budget.New(budget.Config{Total: 20 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		var sink collect
		reg := tools.NewRegistry(nil)
		s, ctx, err := harness.Start(t.Context(), b, harness.Config{Task: "find cats", Model: newModel(t, srv), Tools: reg,
			Sinks: []trace.Sink{&sink}})
		if err != nil {
			t.Fatal(err)
		}
		// A manifest that takes 2s to fetch, then registers its tool.
		err = s.Setup(ctx, "manifest of http://tools.invalid", 5*time.Second, func(ctx context.Context) error {
			time.Sleep(2 * time.Second)
			return reg.Register(newCalls().sleeper("search", time.Second, "3 cats"))
		})
		if err != nil {
			t.Fatal(err)
		}
		failed := s.Setup(ctx, "manifest of http://down.invalid", 500*time.Millisecond, func(ctx context.Context) error {
			<-ctx.Done()
			return context.Cause(ctx)
		})
		res := s.Run(ctx)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}

		if failed == nil || res.Status != landing.Complete || !strings.Contains(res.Answer, "search returned") {
			t.Errorf("setup error %v, result %+v; want the second setup cut, the run complete with the tool found", failed, res)
		}
		if res.Budget.TotalMs != 20000 || res.Budget.SpentMs != 3500 {
			t.Errorf("budget %+v; want total 20s, 3.5s spent: 2.5s of setup and the 1s tool", res.Budget)
		}
		recs := sink.all()
		var setup []trace.Record
		for _, r := range recs {
			if r.Step == harness.SetupStep {
				setup = append(setup, r)
			}
		}
		if len(setup) != 4 {
			t.Fatalf("setup records %+v, want a start and an end for each", setup)
		}
		if a := setup[1]; a.Event != trace.AttemptEnd || a.ElapsedMs != 2000 || a.GrantedMs != 5000 || a.Outcome != trace.OK ||
			a.Message != "manifest of http://tools.invalid" {
			t.Errorf("first setup ends %+v", a)
		}
		if a := setup[3]; a.Outcome != trace.GaveUp || a.ElapsedMs != 2500 {
			t.Errorf("second setup ends %+v, want gave_up at 2.5s", a)
		}
		if recs[0].Event != trace.RunStart || recs[0].TotalMs != 20000 {
			t.Errorf("first record %+v, want run_start with the whole budget", recs[0])
		}
	})
}

func TestRunEndIsTheLastRecordEvenWhenTheSessionStaysOpen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, err := budget.New(budget.Config{Total: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		var sink collect
		s, _, err := harness.Start(t.Context(), b, harness.Config{Task: "find cats", Sinks: []trace.Sink{&sink}})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		first := s.Answer("cats")
		time.Sleep(8 * time.Second) // past narrow at 6s and land at 7.5s
		again := s.Land(t.Context(), &harness.MustLandError{Cause: landing.CauseCancelled}, nil)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}

		if first.Status != landing.Complete || again.Status != first.Status || again.Answer != first.Answer {
			t.Errorf("results %+v then %+v, want the first kept", first, again)
		}
		recs := sink.all()
		if last := recs[len(recs)-1]; last.Event != trace.RunEnd || last.ElapsedMs != 1000 || len(only(recs, trace.RunEnd, "")) != 1 {
			t.Errorf("records %+v, want one run_end, last, at 1s", recs)
		}
	})
}

func TestTheFirstToEndTheRunMakesItsOneResult(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, err := budget.New(budget.Config{Total: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		var sink collect
		s, ctx, err := harness.Start(t.Context(), b, harness.Config{Task: "find cats", Sinks: []trace.Sink{&sink}})
		if err != nil {
			t.Fatal(err)
		}
		answered := make(chan landing.Result)
		landed := s.Land(ctx, &harness.MustLandError{Cause: landing.CauseCancelled}, func(ctx context.Context, prompt string) (string, error) {
			// While the landing call runs, the loop's other goroutine
			// answers: it gets the landing's result, and starts nothing.
			go func() { answered <- s.Answer("cats") }()
			time.Sleep(time.Second)
			if _, _, err := s.BeginTurn(ctx); err != nil {
				return "", err // the landing call itself may still be made
			}
			return "summary", nil
		})
		got := <-answered
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}

		if landed.Status != landing.Partial || landed.Answer != "summary" || got.Status != landed.Status || got.Answer != landed.Answer {
			t.Errorf("Land gave %+v, Answer %+v; want the landing's partial result for both", landed, got)
		}
		if _, _, err := s.BeginTurn(ctx); !errors.Is(err, harness.ErrEnded) {
			t.Errorf("BeginTurn after the result: %v, want ErrEnded", err)
		}
		if n := len(only(sink.all(), trace.RunEnd, "")); n != 1 {
			t.Errorf("%d run_end records, want 1", n)
		}
	})
}

func TestClosingWhileACallRunsCutsItAndWaitsForItsCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k := startKit(t, kitTool("crawl", 1, time.Hour))
		defer k.close()
		reg := registry(t, tools.Remote(tools.Spec{Name: "crawl", Effect: tools.Read, Cancellable: true}, "http://tools.invalid", k.client()))
		b, err := budget.New(budget.Config{Total: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		var sink collect
		s, ctx, err := harness.Start(t.Context(), b, harness.Config{Task: "find cats", Tools: reg, Sinks: []trace.Sink{&sink}})
		if err != nil {
			t.Fatal(err)
		}
		results := make(chan tools.Result, 1)
		go func() { results <- s.Call(ctx, harness.ToolCall{Name: "crawl"})[0] }()
		time.Sleep(2 * time.Second)

		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		res := <-results
		if res.State != tools.StateAbandoned && res.State != tools.StateCancelled {
			t.Errorf("the call in flight ended %+v, want it cut", res)
		}
		recs := sink.all()
		settled := only(recs, trace.CancelSent, "tool:crawl")
		if len(settled) != 2 || settled[1].State != "accepted" {
			t.Errorf("cancel records %+v, want it sent and accepted before Close returned", settled)
		}
		if last := recs[len(recs)-1]; last.Event != trace.RunEnd || last.Cause != "cancelled" {
			t.Errorf("last record %+v, want run_end, cancelled", last)
		}
	})
}

// asking is a sink that reads the run at every record, as a status line
// or a log sink may: it must not wait on the run's own locks.
type asking struct {
	mu    sync.Mutex
	s     *harness.Session
	notes []string
}

func (a *asking) Record(r trace.Record) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.s != nil && r.Event == trace.PhaseChange {
		a.notes = append(a.notes, a.s.Note())
	}
	return nil
}

func TestASinkMayReadTheRunWhenThePhaseChanges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, err := budget.New(budget.Config{Total: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		sink := &asking{}
		s, ctx, err := harness.Start(t.Context(), b, harness.Config{Task: "find cats", Sinks: []trace.Sink{sink}})
		if err != nil {
			t.Fatal(err)
		}
		sink.mu.Lock()
		sink.s = s
		sink.mu.Unlock()
		time.Sleep(7 * time.Second) // narrow at 6s, by the phase timer
		if note := s.Note(); ctx.Err() != nil || !strings.Contains(note, "Phase: narrow.") {
			t.Errorf("at 7s, before its reserve, the run's context ended (%v) or its note says %q: want narrow", context.Cause(ctx), note)
		}
		s.Land(ctx, &harness.MustLandError{Cause: landing.CauseBudget}, nil)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		sink.mu.Lock()
		defer sink.mu.Unlock()
		// The sink is fed off the run's path, so the second note may be
		// read once the run has its result: then it says the run is over.
		if len(sink.notes) != 2 || !strings.Contains(sink.notes[0], "narrow") ||
			!strings.Contains(sink.notes[1], "land") && sink.notes[1] != harness.NoteOver {
			t.Errorf("notes read at the phase changes: %q, want narrow, then land (or over)", sink.notes)
		}
	})
}
