package model

import (
	"context"
	"errors"
	"github.com/glidepath/glidepath/internal/redact"
	"net/http"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/trace"
	"github.com/glidepath/glidepath/watchdog"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
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
}

// A Client calls a chat model under a run's budget. It is the one retry
// layer: the SDK's own retries and timeouts are off, every attempt runs on a
// lease, and every backoff sleep is decided by the budget. A Client is safe
// for concurrent use.
type Client struct {
	oa  openai.Client
	cfg Config
}

// New returns a client for cfg.
func New(cfg Config) (*Client, error) {
	if cfg.Model == "" {
		return nil, errors.New("model: no model name")
	}
	if cfg.MaxAttempts < 0 {
		return nil, errors.New("model: negative MaxAttempts")
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
// quiet clock, a cancellation) ends an attempt with that outcome.
func (c *Client) Complete(ctx context.Context, b *budget.Budget, req Request, obs *trace.Observer) (Response, error) {
	return c.call(ctx, b, req, obs, false)
}

// Land runs the landing call: the same model, offered no tools, on a
// landing lease that may spend the reserve. It makes exactly one attempt
// (SPEC §3: landing is one model call; if it fails, the harness falls back
// to the deterministic summary), so it neither sleeps nor records a backoff:
// a backoff decided against the work budget would, inside the reserve,
// always read as "exceeds budget", which is not why it stopped.
func (c *Client) Land(ctx context.Context, b *budget.Budget, messages []openai.ChatCompletionMessageParamUnion, obs *trace.Observer) (Response, error) {
	return c.call(ctx, b, Request{Messages: messages}, obs, true)
}

func (c *Client) call(ctx context.Context, b *budget.Budget, req Request, obs *trace.Observer, landing bool) (Response, error) {
	if obs == nil {
		obs = &trace.Observer{}
	}
	kind := b.Estimates().Kind(Kind)
	params := c.params(req)
	var last *trace.AttemptError
	for n := 1; ; n++ {
		lease, err := c.lease(b, kind, landing)
		if err != nil {
			obs.OnRefused(Kind, "", n, err)
			if last != nil {
				return Response{Attempts: n - 1}, errors.Join(err, last)
			}
			return Response{}, err
		}
		resp, took, ae := c.attempt(ctx, lease, n, params, obs)
		if ae == nil {
			kind.Observe(took)
			resp.Attempts = n
			return resp, nil
		}
		last = ae
		if landing || !trace.Retryable(ae) || n >= c.cfg.MaxAttempts || ctx.Err() != nil {
			return Response{Attempts: n}, ae
		}
		delay, raErr := b.NextDelay(c.cfg.Backoff, n, ae.Header)
		obs.OnBackoff(Kind, "", n, delay, raErr)
		if delay.GiveUp {
			return Response{Attempts: n}, &trace.GaveUpError{Step: Kind, Delay: delay, Last: ae}
		}
		err = delay.Wait(ctx)
		obs.OnBackoffEnd(Kind, "")
		if err != nil {
			return Response{Attempts: n}, Classify(ctx, n, err)
		}
	}
}

func (c *Client) lease(b *budget.Budget, kind *budget.Kind, landing bool) (budget.Lease, error) {
	if landing {
		return b.LandingLease(kind, c.cfg.Ceiling)
	}
	return b.Lease(kind, c.cfg.Ceiling)
}

func (c *Client) params(req Request) openai.ChatCompletionNewParams {
	p := openai.ChatCompletionNewParams{
		Model:         c.cfg.Model,
		Messages:      req.Messages,
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	}
	if len(req.Tools) > 0 {
		p.Tools = req.Tools
		p.ParallelToolCalls = openai.Bool(req.Parallel)
	}
	return p
}

// attempt makes one streaming request on lease and reports how long it took.
func (c *Client) attempt(ctx context.Context, lease budget.Lease, n int, params openai.ChatCompletionNewParams, obs *trace.Observer) (Response, time.Duration, *trace.AttemptError) {
	actx, cancel := lease.Context(ctx)
	defer cancel()
	info := trace.Attempt{Step: Kind, N: n, Lease: lease, Start: time.Now()}
	obs.OnAttemptStart(info)
	counts := &counter{obs: obs}
	stream := c.oa.Chat.Completions.NewStreaming(actx, params,
		option.WithHeader(budget.Header, lease.Millis()),
		option.WithMiddleware(counts.middleware),
	)
	acc := openai.ChatCompletionAccumulator{}
	for stream.Next() {
		chunk := stream.Current()
		acc.AddChunk(chunk)
		// A finished message, and each finished tool call it asks for, is
		// semantic: the model said something whole.
		if _, ok := acc.JustFinishedContent(); ok {
			obs.OnSignal(trace.Signal{Event: watchdog.ModelMessage, Step: Kind})
		}
		if _, ok := acc.JustFinishedToolCall(); ok {
			obs.OnSignal(trace.Signal{Event: watchdog.ModelMessage, Step: Kind})
		}
	}
	err := stream.Err()
	stream.Close()
	var finish string
	if err == nil && len(acc.Choices) > 0 {
		finish = string(acc.Choices[0].FinishReason)
	}
	if err == nil && finish == "" {
		err = ErrIncomplete
	}
	info.End = time.Now()
	info.Keepalives, info.Chunks = counts.keepalives.Load(), counts.chunks.Load()
	info.Usage = trace.Usage{Input: acc.Usage.PromptTokens, Output: acc.Usage.CompletionTokens, Total: acc.Usage.TotalTokens}
	if apiErr, ok := errors.AsType[*openai.Error](err); ok {
		// A server may quote the key it was sent; no message of ours will.
		apiErr.Message = redact.Secrets(apiErr.Message, c.cfg.APIKey)
	}
	if err != nil {
		ae := Classify(actx, n, err)
		info.Outcome, info.Status, info.Err = ae.Outcome, ae.Status, ae
		obs.OnAttemptEnd(info)
		return Response{}, 0, ae
	}
	info.Outcome = trace.OK
	obs.OnAttemptEnd(info)
	return Response{Message: acc.Choices[0].Message, FinishReason: finish, Usage: acc.Usage}, info.End.Sub(info.Start), nil
}
