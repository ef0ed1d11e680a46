package model

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/glidepath/glidepath/internal/redact"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/trace"
	"github.com/glidepath/glidepath/watchdog"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
)

// DefaultMaxAttempts is the attempts a call gets when [Config.MaxAttempts]
// is zero.
const DefaultMaxAttempts = 3

// Kind is the step kind of model calls in the budget's estimates.
const Kind = "model"

// Config configures a [Client]. Only Model is required.
type Config struct {
	// BaseURL of an OpenAI-compatible server, including /v1. Empty uses
	// the SDK's default: $OPENAI_BASE_URL when set, else OpenAI's API.
	BaseURL string

	// APIKey may be empty for local servers. It is sent as a bearer token
	// and never logged.
	APIKey string

	// Model is the model name sent with every request.
	Model string

	// HTTPClient carries the requests. Nil uses a client with no Timeout:
	// a streaming call is bounded by its lease's context, never by a
	// client-wide timeout that would cut a healthy long answer.
	HTTPClient *http.Client

	// Ceiling bounds each attempt; zero means only the budget does.
	Ceiling time.Duration

	// MaxAttempts is the most attempts a call makes, the first included.
	// Zero means DefaultMaxAttempts.
	MaxAttempts int

	// Backoff is the sleep policy between attempts; the zero value uses
	// budget's defaults.
	Backoff budget.Backoff

	// API is the API the client speaks: [APIChat] (Chat Completions; ""
	// too) or [APIResponses] (the Responses API). Either way a turn's
	// Response is the same; see # The Responses API.
	API string
}

// A Client calls a chat model under a run's budget. It is the one retry
// layer: the SDK's own retries and timeouts are off, every attempt runs on a
// lease, and every backoff sleep is decided by the budget. A Client is safe
// for concurrent use.
type Client struct {
	oa  openai.Client
	cfg Config

	thoughts atomic.Int64 // reasoning summary parts heard, the units of a Responses call's progress
}

// New returns a client for cfg.
func New(cfg Config) (*Client, error) {
	if cfg.Model == "" {
		return nil, errors.New("model: no model name")
	}
	if cfg.MaxAttempts < 0 {
		return nil, errors.New("model: negative MaxAttempts")
	}
	if err := checkAPI(cfg.API); err != nil {
		return nil, err
	}
	if cfg.MaxAttempts == 0 {
		cfg.MaxAttempts = DefaultMaxAttempts
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	opts := []option.RequestOption{
		option.WithMaxRetries(0), // the harness retries, on the budget
		option.WithHTTPClient(hc),
		option.WithAPIKey(cfg.APIKey),
	}
	if cfg.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(cfg.BaseURL))
	}
	return &Client{oa: openai.NewClient(opts...), cfg: cfg}, nil
}

// Request is one model turn.
type Request struct {
	Messages []openai.ChatCompletionMessageParamUnion

	// Tools offered. Nil offers none, and the request carries no tools
	// field at all.
	Tools []openai.ChatCompletionToolUnionParam

	// Parallel, when Tools are offered, says whether the model may ask for
	// several tool calls at once; the landing ladder turns it off.
	Parallel bool

	// MaxOutputTokens is the most tokens the answer may have, reasoning
	// included: max_completion_tokens on Chat Completions,
	// max_output_tokens on the Responses API (which refuses one below 16).
	// Zero sends none, and the request is as it was without it. Each
	// attempt's parameters are built from it as the attempt is sent
	// ([Client.Attempt] takes the attempt's Request), so an attempt may be
	// given a limit of its own, leased from the run's cost (issue 28). An
	// answer cut at the limit is an attempt that ended OK with finish
	// reason "length", on both APIs, and a turn that is not a whole answer
	// ([CheckFinish]). An int32 beside Parallel, so that a Request stays
	// 64 bytes (see TestARequestStaysInItsSize).
	MaxOutputTokens int32

	// MaxSilence caps the turn's allowance of silence on the quiet clock
	// (watchdog.Expected.Max; issue 27); zero: watchdog.DefaultMaxSilence.
	// The rest of the allowance is the model's kind's, in the budget's
	// estimates ([budget.Kind.Expected]).
	MaxSilence time.Duration
}

// Response is a completed model turn.
type Response struct {
	Message      openai.ChatCompletionMessage
	FinishReason string
	Usage        openai.CompletionUsage // of the attempt that succeeded
	Attempts     int
}

// Complete runs one model turn on work leases of b, retrying what SPEC §2
// allows while the budget does. ctx is the run's context; its cause (the
// quiet clock, a cancellation) ends an attempt with that outcome. A turn
// that failed returns a [*TurnError]: its failure, and how its machine
// ended it ([TurnOf]).
func (c *Client) Complete(ctx context.Context, b *budget.Budget, req Request, obs *trace.Observer) (Response, error) {
	resp, err := c.call(ctx, b, req, obs, false)
	return *resp, err
}

// CompletePointer is [Client.Complete] returning a pointer to the
// response, which is never nil: on failure it has only Attempts. It is for
// a caller that stays on the stack while the turn streams, as the
// harness's loop does for most of a run: a Response is over 1 KB, and a
// call through an interface that returns one holds two copies of it in
// the caller's frame, enough to double the goroutine's stack; nor is one
// held anywhere until the turn has ended (issue 13; see # Stack at call).
func (c *Client) CompletePointer(ctx context.Context, b *budget.Budget, req Request, obs *trace.Observer) (*Response, error) {
	return c.call(ctx, b, req, obs, false)
}

// Land runs the landing call: the same model, offered no tools, on a
// landing lease that may spend the reserve. It makes exactly one attempt
// (SPEC §3: landing is one model call; if it fails, the harness falls back
// to the deterministic summary), so it neither sleeps nor records a backoff:
// a backoff decided against the work budget would, inside the reserve,
// always read as "exceeds budget", which is not why it stopped.
func (c *Client) Land(ctx context.Context, b *budget.Budget, messages []openai.ChatCompletionMessageParamUnion, obs *trace.Observer) (Response, error) {
	resp, err := c.call(ctx, b, Request{Messages: messages}, obs, true)
	return *resp, err
}

// Attempt makes attempt n of req on lease, and nothing else: it reads no
// budget, retries nothing, sleeps no backoff, and uses neither Ceiling nor
// MaxAttempts. It is for a host whose own [TurnMachine] leases each
// attempt — a Temporal activity, on the lease its workflow granted
// (temporal/durable) — and reads its failure with [Attempted], as
// [Client.Complete] does (issue 25). It returns the response, or how the
// attempt failed ([Classify]); obs hears its start, its chunks and its end.
func (c *Client) Attempt(ctx context.Context, lease budget.Lease, n int, req Request, obs *trace.Observer) (*Response, *trace.AttemptError) {
	if obs == nil {
		obs = &trace.Observer{}
	}
	resp, _, ae := c.attempt(ctx, lease, n, &req, new(counter), obs)
	if ae == nil {
		resp.Attempts = 1
	}
	return resp, ae
}

// call makes the turn's attempts and returns the response, never nil: on
// failure it has only Attempts.
//
// # Stack
//
// A run spends most of its life blocked in an attempt's stream, with this
// chain of frames on its goroutine's stack. A goroutine's stack is sized
// in powers of two, and a GC halves it only while less than a quarter of
// it is in use (counting an 800-byte guard): a goroutine that waits with
// more than about 7.4 KB in use keeps 32 KB or more. A bare openai-go
// call waits with 6.4 KB in 16 KB; the harness used to wait with 24 KB in
// use, in 64 KB (issue 13, SPEC §7). So the frames that stay on the stack
// while the stream is read are kept small: the response, over 1 KB, is
// made when the attempt has ended and passed up by pointer rather than by
// value from frame to frame, and what needs big values — sending the
// request, folding in a chunk, building the response — is done in helpers
// that have returned before the wait. BenchmarkIdleRuns's stack-B/idle-run
// shows a frame that grew too big.
func (c *Client) call(ctx context.Context, b *budget.Budget, req Request, obs *trace.Observer, landing bool) (*Response, error) {
	if obs == nil {
		obs = &trace.Observer{}
	}
	kind := b.Estimates().Kind(Kind)
	// The turn's rules are its machine's, the ones the harness's
	// middleware and the Temporal workflow drive too (issue 25); this
	// makes the attempts it asks for. The machine is on the heap, with
	// the attempts' counter, in the one object an attempt made anyway:
	// in this frame, it held the run's stack at 32 KB (issue 25).
	t := c.newTurn(landing, Silence(kind, req.MaxSilence))
	lease, n, err := c.next(ctx, t, b, kind, TurnStarted, nil, 0, obs)
	for err == nil {
		resp, took, ae := c.attempt(ctx, lease, n, &req, &t.counts, obs)
		if ae == nil {
			kind.Observe(took) // an answer ends the turn, as the machine has it
			resp.Attempts = n
			return resp, nil
		}
		lease, n, err = c.next(ctx, t, b, kind, TurnAttemptEnded, ae, took, obs)
	}
	return &Response{Attempts: n}, err
}

// turn is what a turn keeps on the heap across its attempts: its machine,
// and the counter of its current attempt's stream, which each attempt
// starts afresh.
type turn struct {
	m      TurnMachine
	counts counter
}

// newTurn makes the turn's state, its machine under c's rules. It is not
// inlined, so that the machine is made in place on the heap, not copied
// through call's frame.
//
//go:noinline
func (c *Client) newTurn(landing bool, silence watchdog.Expected) *turn {
	return &turn{m: NewTurnMachine(TurnRules{MaxAttempts: c.cfg.MaxAttempts, Ceiling: c.cfg.Ceiling, Landing: landing, Backoff: c.cfg.Backoff,
		Silence: silence})}
}

// Silence is what a turn's allowance is computed from: what k, the
// model's kind, knows now, capped by max.
func Silence(k *budget.Kind, max time.Duration) watchdog.Expected {
	x := k.Expected()
	x.Max = max
	return x
}

// next steps t's machine with what happened — the turn started, or its
// attempt ended failed with ae after took, its stream as t's counter
// counted it — and performs what it says until it asks for an attempt,
// whose lease and number it returns, or ends the turn, with the error the
// turn fails with ([TurnFailure]), which carries the machine's TurnDone. It
// sleeps the backoffs the machine asks for. It is not inlined: its frame
// holds the machine's command and event, which are then not on the stack
// while an attempt's stream is waited on (see # Stack at call).
//
//go:noinline
func (c *Client) next(ctx context.Context, t *turn, b *budget.Budget, kind *budget.Kind, ev TurnEventKind,
	ae *trace.AttemptError, took time.Duration, obs *trace.Observer) (budget.Lease, int, error) {
	e := TurnEvent{Kind: ev}
	var raErr error // the failed attempt's malformed Retry-After, for its backoff record
	if ae != nil {
		e.Attempt, raErr = Attempted(ae, time.Now())
		e.Attempt.Took, e.Attempt.Chunks, e.Attempt.Keepalives = took, t.counts.chunks.Load(), t.counts.keepalives.Load()
	}
	var waitErr error
	for {
		e.Figures = budget.FiguresOf(b, kind, ctx.Err() != nil)
		cmd := t.m.Step(e)
		switch cmd.Kind {
		case TurnAttempt:
			cmd.Lease.Deadline = time.Now().Add(cmd.Lease.Granted)
			if b := cmd.Begin; b.Key != "" {
				obs.OnSignal(trace.Signal{Event: watchdog.Begun, Step: Kind, Key: b.Key, Allowance: b.Allowance, Source: b.Source})
			}
			return cmd.Lease, cmd.N, nil
		case TurnSleep:
			obs.OnBackoff(Kind, "", cmd.N, cmd.Delay, raErr)
			waitErr = cmd.Delay.Wait(ctx)
			obs.OnBackoffEnd(Kind, "")
			e = TurnEvent{Kind: TurnSleepOver}
			continue
		}
		if cmd.Refused != nil {
			obs.OnRefused(Kind, "", cmd.N+1, cmd.Refused)
		}
		if cmd.Delay.GiveUp {
			obs.OnBackoff(Kind, "", cmd.N, cmd.Delay, raErr)
		}
		return budget.Lease{}, cmd.N, TurnFailure(ctx, cmd, ae, waitErr)
	}
}

// params fills in p, which is zero, with the parameters of req. p is
// written in place rather than returned, so that the frame holds one copy
// of them.
func (c *Client) params(p *openai.ChatCompletionNewParams, req *Request) {
	p.Model = c.cfg.Model
	p.Messages = req.Messages
	p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	if len(req.Tools) > 0 {
		p.Tools = req.Tools
		p.ParallelToolCalls = openai.Bool(req.Parallel)
	}
	if req.MaxOutputTokens > 0 {
		p.MaxCompletionTokens = openai.Int(int64(req.MaxOutputTokens))
	}
}

// attempt makes one streaming request on lease and returns its response
// and how long it took. It is the frame that waits on the stream, so it
// holds pointers only (see # Stack at call). counts is the turn's
// counter, which it starts afresh: the previous attempt's stream is
// closed.
func (c *Client) attempt(ctx context.Context, lease budget.Lease, n int, req *Request, counts *counter, obs *trace.Observer) (*Response, time.Duration, *trace.AttemptError) {
	if c.cfg.API == APIResponses {
		return c.respond(ctx, lease, n, req, counts, obs)
	}
	actx, cancel := lease.Context(ctx)
	defer cancel()
	start := time.Now()
	*counts = counter{obs: obs}
	stream := c.open(actx, lease, n, start, req, counts)
	// The accumulator (about 8 KB) is made at the first chunk: a stream
	// that so far sends only keepalives holds none (issue 13).
	var acc *openai.ChatCompletionAccumulator
	for stream.Next() {
		acc = addChunk(acc, stream, obs)
	}
	err := stream.Err()
	stream.Close()
	return c.end(actx, lease, n, start, counts, acc, err)
}

// open reports the attempt's start and sends its request. It is not
// inlined, and the request's parameters, over 1 KB, are made here, once
// per attempt, so that they are not on the stack during the wait.
//
//go:noinline
func (c *Client) open(actx context.Context, lease budget.Lease, n int, start time.Time, req *Request, counts *counter) *ssestream.Stream[openai.ChatCompletionChunk] {
	counts.obs.OnAttemptStart(trace.Attempt{Step: Kind, N: n, Lease: lease, Start: start})
	var params openai.ChatCompletionNewParams
	c.params(&params, req)
	return c.oa.Chat.Completions.NewStreaming(actx, params,
		option.WithHeader(budget.Header, lease.Millis()),
		option.WithMiddleware(counts.middleware),
	)
}

// addChunk folds the stream's current chunk into acc, made now if it is
// nil, and signals what the chunk finished: a finished message, and each
// finished tool call it asks for, is semantic: the model said something
// whole. It is not inlined: its frame holds a chunk, over 1 KB.
//
//go:noinline
func addChunk(acc *openai.ChatCompletionAccumulator, stream *ssestream.Stream[openai.ChatCompletionChunk], obs *trace.Observer) *openai.ChatCompletionAccumulator {
	if acc == nil {
		acc = new(openai.ChatCompletionAccumulator)
	}
	acc.AddChunk(stream.Current())
	if _, ok := acc.JustFinishedContent(); ok {
		obs.OnSignal(trace.Signal{Event: watchdog.ModelMessage, Step: Kind})
	}
	if _, ok := acc.JustFinishedToolCall(); ok {
		obs.OnSignal(trace.Signal{Event: watchdog.ModelMessage, Step: Kind})
	}
	return acc
}

// end classifies how the attempt's stream ended, reports the attempt's
// end and, when it succeeded, makes its response. It returns how long the
// attempt took, for the model's latency when it answered, for how it went
// unanswered when it failed. acc is nil when no chunk came. It is not
// inlined: its frame holds a trace.Attempt.
//
//go:noinline
func (c *Client) end(actx context.Context, lease budget.Lease, n int, start time.Time, counts *counter, acc *openai.ChatCompletionAccumulator, err error) (*Response, time.Duration, *trace.AttemptError) {
	var finish string
	if err == nil && acc != nil && len(acc.Choices) > 0 {
		finish = string(acc.Choices[0].FinishReason)
	}
	if err == nil && finish == "" {
		err = ErrIncomplete
		if ns := counts.notServer(); ns != nil && acc == nil {
			// Nothing of an answer came, and not as a stream: it is not
			// a model server, not a stream cut short (issue 24).
			err = ns
		}
	}
	info := trace.Attempt{Step: Kind, N: n, Lease: lease, Start: start, End: time.Now()}
	info.Keepalives, info.Chunks = counts.keepalives.Load(), counts.chunks.Load()
	if acc != nil {
		info.Usage = usageOf(acc.Usage)
		info.Finish, info.Model = finish, acc.Model
	}
	if apiErr, ok := errors.AsType[*openai.Error](err); ok {
		// A server may quote the key it was sent; no message of ours will.
		apiErr.Message = redact.Secrets(apiErr.Message, c.cfg.APIKey)
	}
	obs := counts.obs
	if err != nil {
		ae := Classify(actx, n, err)
		info.Outcome, info.Status, info.Err = ae.Outcome, ae.Status, ae
		obs.OnAttemptEnd(info)
		return nil, info.End.Sub(info.Start), ae
	}
	info.Outcome = trace.OK
	obs.OnAttemptEnd(info)
	resp := &Response{Message: acc.Choices[0].Message, FinishReason: finish, Usage: acc.Usage}
	return resp, info.End.Sub(info.Start), nil
}
