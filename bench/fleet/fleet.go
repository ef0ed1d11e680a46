package fleet

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/glidepath/glidepath/admit"
	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/harness"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/model"
	"github.com/glidepath/glidepath/sim"
	"github.com/glidepath/glidepath/trace"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// Config is a fleet. The zero value of each field selects its default.
type Config struct {
	Runs       int           // runs at once; default 1000
	Budget     time.Duration // every run's B, all started together; default DefaultBudget
	RetryAfter string        // the outage's Retry-After header; default "1"
	Window     time.Duration // the window retries are counted in; default 50ms

	// Admit is the process's admission limit for Glidepath's runs
	// (admit.Config.Limit): a run that comes when Admit are running is
	// refused at once, labeled at_capacity (issue 25). Zero: none.
	Admit int
	// Late is the most a Glidepath run may wait from its submission to
	// the door (admit.Config.Late); a run that waited longer is refused,
	// labeled at_capacity. Zero: no bound.
	Late time.Duration
}

// DefaultBudget is a fleet's B when Config.Budget is zero.
const DefaultBudget = 5 * time.Second

func (c Config) withDefaults() Config {
	if c.Runs <= 0 {
		c.Runs = 1000
	}
	if c.Budget <= 0 {
		c.Budget = DefaultBudget
	}
	if c.RetryAfter == "" {
		c.RetryAfter = "1"
	}
	if c.Window <= 0 {
		c.Window = 50 * time.Millisecond
	}
	return c
}

// outageFor is how long the sim turns every request away, from the
// fleet's first: long enough for all of a fleet's first requests to
// arrive inside it, shorter than a Retry-After of 1s, so that a retry
// that waited as asked is answered.
const outageFor = 800 * time.Millisecond

// Result is what a fleet did.
type Result struct {
	Runs     int
	Labeled  int // returned a result, complete or partial with its boundary
	Complete int
	Errors   int // returned an error instead of a result
	// Retries is how many requests were sent again after the outage;
	// PeakWindow the most of them in any one Window; MeanWindow their
	// mean per Window over the stretch from the first to the last.
	Retries    int
	PeakWindow int
	MeanWindow float64
	// FirstSpread is how long the runs' first requests took to all go
	// out, from the first to the last: a fleet that cannot send them
	// within the outage is not all turned away, and one that is
	// CPU-bound sends its retries as it can, not as they fell due.
	FirstSpread time.Duration
	// DuePeakWindow and DueMeanWindow are PeakWindow and MeanWindow
	// for when the retries fell due — when each sleep ended — rather
	// than when they were sent: what the jitter did, apart from how fast
	// the process could send.
	DuePeakWindow int
	DueMeanWindow float64
	// End is when each run that was admitted returned, from the fleet's
	// start (every run's submission, when its budget started): p50, p99
	// (nearest rank) and the latest, to set beside Budget. Late is how
	// many of them returned after Budget.
	EndP50, EndP99, EndMax time.Duration
	Budget                 time.Duration
	Late                   int
	// Refused is how many runs the process's admission refused
	// (Config.Admit), each with its labeled result, cause at_capacity;
	// RefusedEndMax is when the last of them returned.
	Refused       int
	RefusedEndMax time.Duration
	// BytesPerRun is the heap and goroutine stacks in use per run while
	// every run waits out the Retry-After, beyond what was in use before
	// the fleet started (after a GC).
	BytesPerRun float64
	// HeapPerRun and StackPerRun split BytesPerRun into the heap and the
	// goroutine stacks; GoroutinesPerRun is the goroutines beyond those
	// before the fleet, per run, at the same moment (issue 20: where a
	// waiting run's memory goes).
	HeapPerRun, StackPerRun, GoroutinesPerRun float64
	// GoroutinesLeft is the goroutines beyond those before the fleet,
	// once it has ended and the sim is closed.
	GoroutinesLeft int
	// StartCPUPerRun is the process's CPU time, user and system, from
	// the fleet's start until its last first request went out, per run;
	// StartBytesPerRun and StartAllocsPerRun the heap it allocated then,
	// per run (issue 20: what a fleet's start is made of). The sim is in
	// the same process: its side of those requests is in them too, for
	// every system alike. Zero when not every run sent a first request.
	StartCPUPerRun                      time.Duration
	StartBytesPerRun, StartAllocsPerRun float64
	// AwayCPUPerRun is the process's CPU from the fleet's start until
	// the last of its runs was turned away and had its sleep decided (a
	// Glidepath run's backoff record, the SDK's 503 with Retry-After),
	// per run: the whole of each run's start, where StartCPUPerRun is what
	// of it came before the last first request went out. Zero when fewer
	// were turned away than there are runs.
	AwayCPUPerRun time.Duration
}

// cost is what the process has spent so far: CPU time and heap
// allocations.
type cost struct {
	cpu           time.Duration
	bytes, allocs uint64
}

func costNow() cost {
	var ru syscall.Rusage
	var c cost
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		c.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	c.bytes, c.allocs = m.TotalAlloc, m.Mallocs
	return c
}

func (c cost) minus(d cost) cost {
	return cost{cpu: c.cpu - d.cpu, bytes: c.bytes - d.bytes, allocs: c.allocs - d.allocs}
}

// PeakOverMean is the busiest window against the mean one.
func (r Result) PeakOverMean() float64 {
	if r.MeanWindow == 0 {
		return 0
	}
	return float64(r.PeakWindow) / r.MeanWindow
}

// Glidepath runs cfg.Runs harness.Run calls at once, each on a budget of
// cfg.Budget started at the same instant, its submission, through one
// model.Client against one sim that answers 503 with Retry-After every
// request of the 800ms after the first, each run's first. The runs share
// one admit.Limiter of cfg.Admit and cfg.Late.
func Glidepath(ctx context.Context, cfg Config) (Result, error) {
	cfg = cfg.withDefaults()
	door, err := admit.New(admit.Config{Limit: cfg.Admit, Late: cfg.Late})
	if err != nil {
		return Result{}, err
	}
	return measure(ctx, cfg, func(srv *sim.Server, sent func(retry bool), due func(at time.Time)) (runBody, error) {
		c, err := model.New(model.Config{BaseURL: srv.URL, HTTPClient: srv.Client(), Model: sim.ModelID})
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context, submitted time.Time) (runEnd, error) {
			// The budget starts at the run's submission, not when its
			// goroutine gets the CPU: on a loaded process, seconds later
			// (issue 25).
			b, err := budget.New(budget.Config{Total: cfg.Budget, Start: submitted})
			if err != nil {
				return runEnd{}, err
			}
			res, err := harness.Run(ctx, b, harness.Config{Task: Task, Model: c, Admit: door,
				Sinks: []trace.Sink{&sentSink{sent: sent, due: due}}})
			if err != nil {
				return runEnd{}, err
			}
			return runEnd{labeled: res.Status == landing.Complete || (res.Status == landing.Partial && res.Boundary != ""),
				complete: res.Status == landing.Complete, refused: res.Cause == landing.CauseAtCapacity}, nil
		}, nil
	})
}

// SDKDefaults is the baseline: the same first request from each of
// cfg.Runs goroutines through openai-go as it comes (2 retries, Retry-After
// honored as sent), each under context.WithTimeout(cfg.Budget). The same
// request: the messages a Glidepath run of cfg sends first
// ([FirstMessages]), built anew for each call as a loop builds its
// conversation. An answer counts as labeled only in the sense that it is
// an answer: the SDK says nothing of what it did not do.
func SDKDefaults(ctx context.Context, cfg Config) (Result, error) {
	return sdkFleet(ctx, cfg, func(ctx context.Context, c openai.Client, p openai.ChatCompletionNewParams) bool {
		resp, err := c.Chat.Completions.New(ctx, p)
		return err == nil && len(resp.Choices) > 0 && resp.Choices[0].Message.Content != ""
	})
}

// SDKStreaming is the same baseline making the same call as Glidepath's
// runs do: a streaming chat completion of the same messages, read to its
// end, through openai-go as it comes (2 retries, Retry-After honored as
// sent), each under context.WithTimeout(cfg.Budget). It is the baseline a
// streaming run's start cost and memory are judged against (SPEC §7: the
// same call on both sides).
func SDKStreaming(ctx context.Context, cfg Config) (Result, error) {
	return sdkFleet(ctx, cfg, func(ctx context.Context, c openai.Client, p openai.ChatCompletionNewParams) bool {
		p.StreamOptions = IncludeUsage
		stream := c.Chat.Completions.NewStreaming(ctx, p)
		defer stream.Close()
		var acc openai.ChatCompletionAccumulator
		for stream.Next() {
			acc.AddChunk(stream.Current())
		}
		return stream.Err() == nil && len(acc.Choices) > 0 && acc.Choices[0].Message.Content != ""
	})
}

// sdkFleet measures a fleet of bare openai-go calls: call makes one run's
// request of the run's first messages, under context.WithTimeout(cfg.Budget),
// and reports whether it answered. An error is what the user gets, not a
// fleet failure.
func sdkFleet(ctx context.Context, cfg Config, call func(ctx context.Context, c openai.Client, p openai.ChatCompletionNewParams) bool) (Result, error) {
	cfg = cfg.withDefaults()
	msgs, err := FirstMessages(ctx, Task, cfg.Budget, 0)
	if err != nil {
		return Result{}, err
	}
	return measure(ctx, cfg, func(srv *sim.Server, sent func(retry bool), due func(at time.Time)) (runBody, error) {
		hc := &http.Client{Transport: sentCounter{next: srv.Client().Transport, sent: sent, due: due}}
		c := openai.NewClient(option.WithBaseURL(srv.URL), option.WithHTTPClient(hc), option.WithAPIKey("sim"))
		return func(ctx context.Context, submitted time.Time) (runEnd, error) {
			// The timeout counts from the submission, as a Glidepath run's
			// budget does.
			ctx, cancel := context.WithDeadline(ctx, submitted.Add(cfg.Budget))
			defer cancel()
			// The messages are built anew for each call, as a loop builds
			// its conversation.
			ok := call(ctx, c, openai.ChatCompletionNewParams{Model: sim.ModelID, Messages: Params(msgs)})
			return runEnd{labeled: ok, complete: ok}, nil
		}, nil
	})
}

// A runner makes one run's body, given the fleet's sim and a callback for
// each retry it sends.
type runner func(srv *sim.Server, sent func(retry bool), due func(at time.Time)) (runBody, error)

// A runBody is one run, submitted at submitted: every run of a fleet is
// submitted at the same instant, when the fleet is released.
type runBody func(ctx context.Context, submitted time.Time) (runEnd, error)

// runEnd is how a run ended: labeled (complete, or partial with its
// boundary), complete, or refused at the door (labeled too).
type runEnd struct {
	labeled, complete, refused bool
}

func measure(ctx context.Context, cfg Config, newRun runner) (Result, error) {
	runtime.GC()
	goroutinesBefore := runtime.NumGoroutine()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)

	// The outage: every request in the first outageFor after the first
	// one, which is each run's first when they start together.
	srv := sim.NewPipeServer(&sim.Scenario{Rules: []sim.Rule{{For: outageFor, Status: http.StatusServiceUnavailable,
		Message: "[sim] overloaded: try again later.", RetryAfter: cfg.RetryAfter}}})
	var (
		mu                    sync.Mutex
		firsts, retries, dues []time.Time
	)
	var awayCost cost // taken as the last run is turned away
	due := func(at time.Time) {
		mu.Lock()
		dues = append(dues, at)
		last := len(dues) == cfg.Runs
		mu.Unlock()
		if last {
			awayCost = costNow()
		}
	}
	var startCost cost // taken as the last first request goes out
	sent := func(retry bool) {
		t := time.Now()
		mu.Lock()
		if retry {
			retries = append(retries, t)
		} else {
			firsts = append(firsts, t)
		}
		last := !retry && len(firsts) == cfg.Runs
		mu.Unlock()
		if last {
			startCost = costNow()
		}
	}
	run, err := newRun(srv, sent, due)
	if err != nil {
		srv.Close()
		return Result{}, err
	}

	res := Result{Runs: cfg.Runs, Budget: cfg.Budget}
	ends := make([]time.Duration, cfg.Runs)
	refusedAt := make([]bool, cfg.Runs)
	var (
		wg                        sync.WaitGroup
		labeled, complete, failed atomic.Int64
		firstErr                  error
		errOnce                   sync.Once
	)
	go1 := make(chan struct{})
	start := time.Now()
	for i := range cfg.Runs {
		wg.Go(func() {
			<-go1
			e, err := run(ctx, start)
			ends[i], refusedAt[i] = time.Since(start), e.refused
			switch {
			case err != nil:
				failed.Add(1)
				errOnce.Do(func() { firstErr = err })
			case e.labeled:
				labeled.Add(1)
			}
			if e.complete {
				complete.Add(1)
			}
		})
	}
	start = time.Now()
	startedAt := costNow()
	close(go1)

	// While the fleet waits out the server's Retry-After, before the first
	// retry can be due: the memory of a fleet at rest.
	res.BytesPerRun, res.HeapPerRun, res.StackPerRun, res.GoroutinesPerRun = waitingBytes(ctx, srv, cfg, &before, goroutinesBefore)

	wg.Wait()
	srv.Close()
	if startCost != (cost{}) {
		n := float64(cfg.Runs)
		d := startCost.minus(startedAt)
		res.StartCPUPerRun = time.Duration(float64(d.cpu) / n)
		res.StartBytesPerRun, res.StartAllocsPerRun = float64(d.bytes)/n, float64(d.allocs)/n
	}
	if awayCost != (cost{}) {
		res.AwayCPUPerRun = time.Duration(float64(awayCost.minus(startedAt).cpu) / float64(cfg.Runs))
	}
	res.Labeled, res.Complete, res.Errors = int(labeled.Load()), int(complete.Load()), int(failed.Load())
	if firstErr != nil && res.Errors == cfg.Runs {
		return res, fmt.Errorf("every run failed: %w", firstErr)
	}
	// The admitted runs' ends, and apart the refused ones'.
	admitted := ends[:0:0]
	for i, end := range ends {
		if refusedAt[i] {
			res.Refused++
			res.RefusedEndMax = max(res.RefusedEndMax, end)
			continue
		}
		admitted = append(admitted, end)
		if end > cfg.Budget {
			res.Late++
		}
	}
	if len(admitted) > 0 {
		slices.Sort(admitted)
		res.EndP50, res.EndP99, res.EndMax = nearestRank(admitted, 0.50), nearestRank(admitted, 0.99), admitted[len(admitted)-1]
	}
	res.Retries = len(retries)
	if len(firsts) > 0 {
		slices.SortFunc(firsts, func(a, b time.Time) int { return a.Compare(b) })
		res.FirstSpread = firsts[len(firsts)-1].Sub(firsts[0])
	}
	res.PeakWindow, res.MeanWindow = windows(retries, cfg.Window)
	res.DuePeakWindow, res.DueMeanWindow = windows(dues, cfg.Window)
	res.GoroutinesLeft = goroutinesAfter(goroutinesBefore)
	return res, nil
}

// waitingBytes samples the heap, the stacks and the goroutines in use once every run's first
// request was turned away (the sim has answered them all), less what was
// in use before, per run. It gives up waiting at half the Retry-After's
// second, so as never to sample a fleet already retrying.
func waitingBytes(ctx context.Context, srv *sim.Server, cfg Config, before *runtime.MemStats, goroutinesBefore int) (total, heap, stack, goroutines float64) {
	deadline := time.Now().Add(500 * time.Millisecond)
	for srv.Received() < cfg.Runs && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(5 * time.Millisecond) // polling a counter, not synchronizing: the sample is taken whenever it is full
	}
	runtime.GC()
	var now runtime.MemStats
	runtime.ReadMemStats(&now)
	n := float64(cfg.Runs)
	heap = float64(int64(now.HeapInuse)-int64(before.HeapInuse)) / n
	stack = float64(int64(now.StackInuse)-int64(before.StackInuse)) / n
	goroutines = float64(runtime.NumGoroutine()-goroutinesBefore) / n
	return heap + stack, heap, stack, goroutines
}

// windows returns the most retries in any window of width w (a sliding
// window starting at each retry) and the mean per w over the stretch from
// the first retry to the last (at least one w).
func windows(ts []time.Time, w time.Duration) (peak int, mean float64) {
	if len(ts) == 0 {
		return 0, 0
	}
	slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
	j := 0
	for i := range ts {
		for ts[i].Sub(ts[j]) >= w {
			j++
		}
		peak = max(peak, i-j+1)
	}
	span := max(ts[len(ts)-1].Sub(ts[0]), w)
	return peak, float64(len(ts)) / (float64(span) / float64(w))
}

func nearestRank(sorted []time.Duration, q float64) time.Duration {
	rank := int(math.Ceil(q * float64(len(sorted))))
	return sorted[max(0, min(rank, len(sorted))-1)]
}

// goroutinesAfter waits, boundedly, for goroutines that are ending to be
// gone, and returns how many beyond before are left.
func goroutinesAfter(before int) int {
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		runtime.Gosched()
		time.Sleep(10 * time.Millisecond)
	}
	return max(0, runtime.NumGoroutine()-before)
}

// sentSink calls sent for a run's first request, and for each retry of
// its first turn the outage caused, and due with when each backoff sleep
// before a retry will end. Only the run's first attempt is a first
// request: a run whose retries came too late lands, and its landing call,
// an attempt 1 of its own, is not one (issue 20: counted as one, it
// stretched a fleet's "first requests sent over" to its last landing).
//
// It is a trace.ContextSink, so that the run calls it on its own path, in
// seq order, as it sends: a queued sink is handed records a moment later,
// and with thousands of runs at once its queue can be cut at the run's
// end and records dropped for it (trace.QueueLen, trace.FlushGrace), which
// would lose sends from the count and fail the run with harness.ErrTrace.
type sentSink struct {
	sent  func(retry bool)
	due   func(at time.Time)
	first atomic.Bool // reports whether the run's first request was counted
}

// AttemptContext gives the attempt ctx as it is: the sink only counts.
func (s *sentSink) AttemptContext(ctx context.Context, _ trace.Record) context.Context { return ctx }

func (s *sentSink) Record(r trace.Record) error {
	switch {
	case r.Event != trace.AttemptStart && r.Event != trace.Backoff, r.Step != model.Kind:
	case r.Event == trace.AttemptStart && !s.first.Swap(true):
		s.sent(false)
	case r.Event == trace.AttemptStart && r.StepIndex <= 1 && r.Attempt > 1:
		s.sent(true)
	case r.Event == trace.Backoff && !r.GaveUp:
		// From the record's stamp, the instant the sleep was decided: a
		// sink is handed records from a queue, a moment later (trace).
		s.due(r.TS.Add(time.Duration(r.SleepMs) * time.Millisecond))
	}
	return nil
}

// sentCounter calls sent for each request openai-go sends, which marks
// those it sends again with X-Stainless-Retry-Count.
type sentCounter struct {
	next http.RoundTripper
	sent func(retry bool)
	due  func(at time.Time)
}

// RoundTrip counts r, and for a 503 with Retry-After in seconds, when the
// SDK's retry falls due: it waits what the server said.
func (sc sentCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	n := r.Header.Get("X-Stainless-Retry-Count")
	sc.sent(n != "" && n != "0")
	resp, err := sc.next.RoundTrip(r)
	if err == nil && resp.StatusCode == http.StatusServiceUnavailable {
		if secs, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil {
			sc.due(time.Now().Add(time.Duration(secs) * time.Second))
		}
	}
	return resp, err
}
