package spans

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"
	"sync"

	"github.com/glidepath/glidepath/internal/redact"
	"github.com/glidepath/glidepath/trace"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	oteltrace "go.opentelemetry.io/otel/trace"
)

// The budget attributes of SPEC §8.
const (
	GrantedMs   = attribute.Key("glidepath.budget.granted_ms")
	RemainingMs = attribute.Key("glidepath.budget.remaining_ms")
	Phase       = attribute.Key("glidepath.phase")
	Outcome     = attribute.Key("glidepath.outcome")
	Cause       = attribute.Key("glidepath.cause")
	Status      = attribute.Key("glidepath.status")
	RunID       = attribute.Key("glidepath.run_id")
	TotalMs     = attribute.Key("glidepath.budget.total_ms")
)

// Config says what the records do not: which model and provider a run
// talks to, where its server is, and the agent's name. The zero value
// names none of them.
type Config struct {
	Provider string // gen_ai.provider.name, e.g. "openai"
	Model    string // gen_ai.request.model
	Agent    string // gen_ai.agent.name of a run that is not a sub-agent; empty: "glidepath"

	// ServerAddress and ServerPort are the model server's host and port
	// (server.address, server.port on each chat span); "" and 0: not said.
	ServerAddress string
	ServerPort    int
}

// ResponseStatus is the attribute invoke_agent carries to say how the run
// ended in the GenAI conventions' words: "completed", "incomplete" (a
// labeled partial), "cancelled" or "failed" (the model failed the run), so
// that a partial run reads as incomplete in any backend.
const ResponseStatus = attribute.Key("gen_ai.response.status")

// A Sink makes spans of the records it is handed, with tracer. It is safe
// for concurrent use, and for the records of several runs at once, a
// parent's and its children's. A zero Sink makes no spans: it drops every
// record, and gives every context back as it came.
type Sink struct {
	tracer oteltrace.Tracer
	cfg    Config

	mu    sync.Mutex           // guards runs and calls
	runs  map[string]*run      // by run id, until run_end
	calls map[string]agentCall // a sub-agent call's span, by its key, for its child's run
}

// agentCall is the span of a call that runs a sub-agent, and the agent's
// name when the call is this process's ("" for a caller in another one).
type agentCall struct {
	span oteltrace.SpanContext
	name string
}

type run struct {
	span     oteltrace.Span
	ctx      context.Context
	attempts map[attemptID]oteltrace.Span
	parent   string              // the parent run's id, for a sub-agent in this process
	keys     map[string]struct{} // every idempotency key its records named, its children's included
}

type attemptID struct {
	step     string
	index, n int
	key      string
}

func idOf(r trace.Record) attemptID { return attemptID{r.Step, r.StepIndex, r.Attempt, r.Key} }

// New returns a Sink whose spans tracer makes: a TracerProvider's, such as
// the SDK's with an OTLP/HTTP exporter.
func New(tracer oteltrace.Tracer, cfg Config) *Sink {
	return &Sink{tracer: tracer, cfg: cfg, runs: map[string]*run{}, calls: map[string]agentCall{}}
}

// Record makes or ends the span the record is about, or adds it to one as
// an event. It never fails: a record of a run it has not seen start is
// dropped.
func (s *Sink) Record(r trace.Record) error {
	if s.tracer == nil {
		return nil // a zero Sink
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.Event == trace.RunStart {
		s.start(r)
		return nil
	}
	ru := s.runs[r.RunID]
	if ru == nil {
		return nil
	}
	if r.Key != "" {
		ru.keys[r.Key] = struct{}{}
	}
	r.Message = ru.scrub(r.Message)
	at := oteltrace.WithTimestamp(r.TS)
	switch r.Event {
	case trace.AttemptStart:
		s.attemptStart(ru, r)
	case trace.AttemptEnd:
		id := idOf(r)
		sp := ru.attempts[id]
		if sp == nil {
			return nil
		}
		delete(ru.attempts, id)
		sp.SetAttributes(Outcome.String(string(r.Outcome)), RemainingMs.Int64(r.RemainingMs))
		if r.InputTokens > 0 || r.OutputTokens > 0 {
			sp.SetAttributes(semconv.GenAIUsageInputTokens(int(r.InputTokens)), semconv.GenAIUsageOutputTokens(int(r.OutputTokens)))
		}
		if r.ResponseModel != "" {
			sp.SetAttributes(semconv.GenAIResponseModel(r.ResponseModel))
		}
		if r.FinishReason != "" {
			sp.SetAttributes(semconv.GenAIResponseFinishReasons(r.FinishReason))
		}
		if r.Outcome != trace.OK {
			sp.SetStatus(codes.Error, string(r.Outcome))
			if r.Message != "" {
				sp.SetAttributes(semconv.ErrorTypeKey.String(string(r.Outcome)))
			}
		}
		sp.End(oteltrace.WithTimestamp(r.TS))
	case trace.Progress:
		target := ru.span
		for id, sp := range ru.attempts {
			if id.key == r.Key && id.step == r.Step {
				target = sp
			}
		}
		target.AddEvent("glidepath.progress", at, oteltrace.WithAttributes(
			attribute.Int64("glidepath.progress.units", r.Units), attribute.String("glidepath.progress.message", r.Message)))
	case trace.RunEnd:
		for id, sp := range ru.attempts {
			sp.End(at)
			delete(ru.attempts, id)
		}
		ru.span.SetAttributes(Status.String(r.Result), Phase.String(r.Phase), RemainingMs.Int64(r.RemainingMs),
			ResponseStatus.String(responseStatus(r)))
		if r.Cause != "" { // a complete run has no cause: none is said
			ru.span.SetAttributes(Cause.String(r.Cause))
		}
		if r.Result != "complete" {
			ru.span.SetStatus(codes.Error, "partial: "+r.Cause)
		}
		ru.span.End(at)
		delete(s.runs, r.RunID)
		if p := s.runs[ru.parent]; p != nil {
			// The parent's landing may name its child's keys.
			for k := range ru.keys {
				p.keys[k] = struct{}{}
			}
		}
	default:
		ru.span.AddEvent("glidepath."+string(r.Event), at, oteltrace.WithAttributes(eventAttributes(r)...))
	}
	return nil
}

// start begins a run's span: a root, or for a sub-agent a child of its
// parent's call span.
func (s *Sink) start(r trace.Record) {
	parent := context.Background()
	agent := s.cfg.Agent
	if agent == "" {
		agent = "glidepath"
	}
	call, called := s.calls[r.Key]
	if called && r.Key != "" {
		parent = oteltrace.ContextWithSpanContext(parent, call.span)
		delete(s.calls, r.Key)
	}
	attrs := []attribute.KeyValue{
		semconv.GenAIOperationNameInvokeAgent,
		RunID.String(r.RunID),
		TotalMs.Int64(r.TotalMs),
	}
	if r.ParentRunID != "" {
		// A sub-agent is named for its entry, so that two of them can be
		// told apart.
		agent = cmp.Or(call.name, "sub-agent")
		attrs = append(attrs, attribute.String("glidepath.parent_run_id", r.ParentRunID))
	}
	attrs = append(attrs, semconv.GenAIAgentName(agent))
	if s.cfg.Provider != "" {
		attrs = append(attrs, semconv.GenAIProviderNameKey.String(s.cfg.Provider))
	}
	ctx, sp := s.tracer.Start(parent, "invoke_agent "+agent, oteltrace.WithTimestamp(r.TS),
		oteltrace.WithSpanKind(oteltrace.SpanKindInternal), oteltrace.WithAttributes(attrs...))
	ru := &run{span: sp, ctx: ctx, attempts: map[attemptID]oteltrace.Span{}, parent: r.ParentRunID, keys: map[string]struct{}{}}
	if r.Key != "" {
		ru.keys[r.Key] = struct{}{}
	}
	s.runs[r.RunID] = ru
}

// ParentCall makes the run whose run_start carries key (the idempotency
// key of the call that ran it, harness.ChildCall) a child of parent:
// the span of the caller's attempt in another process, read from the
// call's W3C traceparent, as `harness serve` does for each call it
// serves, so that a remote sub-agent's run sits under the caller's
// execute_tool span. An invalid parent is ignored. A zero Sink ignores it.
func (s *Sink) ParentCall(key string, parent oteltrace.SpanContext) {
	if s.tracer == nil || key == "" || !parent.IsValid() {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls[key] = agentCall{span: parent}
}

// responseStatus is gen_ai.response.status for the run_end record r.
func responseStatus(r trace.Record) string {
	switch {
	case r.Result == "complete":
		return "completed"
	case r.Cause == "cancelled":
		return "cancelled"
	case r.Cause == "upstream":
		return "failed"
	}
	return "incomplete"
}

// mintedKey is the shape of a key cancel.NewKey mints: a key a message
// names that this sink never saw in a record (an orphan of a child in
// another process) is still not exported raw.
var mintedKey = regexp.MustCompile(`gp_[a-z2-7]{26}`)

// scrub returns text as it may leave the process: with every secret
// redacted and every idempotency key the run has seen, or shaped like one,
// replaced by its hash (SPEC §8), so that a message still says which call
// it is about without exporting what would let anyone act as it.
func (ru *run) scrub(text string) string {
	if text == "" {
		return ""
	}
	for k := range ru.keys {
		if len(k) >= 8 { // a shorter "key" would blank ordinary words
			text = strings.ReplaceAll(text, k, HashKey(k))
		}
	}
	return redact.Secrets(mintedKey.ReplaceAllStringFunc(text, HashKey))
}

// HashKey is how an idempotency key is named in anything exported:
// "key-sha256:" and the first 12 hex digits of its SHA-256, enough to find
// the call in a trace file or a journal by hashing its keys, and nothing
// to act on.
func HashKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return "key-sha256:" + hex.EncodeToString(sum[:6])
}

// attemptStart begins an attempt's span under its run's.
func (s *Sink) attemptStart(ru *run, r trace.Record) {
	attrs := []attribute.KeyValue{
		semconv.HTTPRequestResendCount(r.ResendCount),
		GrantedMs.Int64(r.GrantedMs),
		RemainingMs.Int64(r.RemainingMs),
		Phase.String(r.Phase),
	}
	var name string
	// A chat span is a request to the model's server: CLIENT. A tool's
	// execute_tool span is INTERNAL, as the GenAI conventions say, whatever
	// the tool calls; setup is the harness's own.
	kind := oteltrace.SpanKindInternal
	switch {
	case r.Step == "model":
		kind = oteltrace.SpanKindClient
		attrs = append(attrs, semconv.GenAIOperationNameChat)
		if s.cfg.Provider != "" {
			attrs = append(attrs, semconv.GenAIProviderNameKey.String(s.cfg.Provider))
		}
		if s.cfg.ServerAddress != "" {
			attrs = append(attrs, semconv.ServerAddress(s.cfg.ServerAddress))
			if s.cfg.ServerPort > 0 {
				attrs = append(attrs, semconv.ServerPort(s.cfg.ServerPort))
			}
		}
		name = "chat"
		if s.cfg.Model != "" {
			attrs = append(attrs, semconv.GenAIRequestModel(s.cfg.Model))
			name += " " + s.cfg.Model
		}
		if r.StepIndex == 0 {
			attrs = append(attrs, attribute.Bool("glidepath.landing", true))
		}
	case r.Step == "setup":
		name = "glidepath.setup"
		attrs = append(attrs, attribute.String("glidepath.setup", r.Message)) // scrubbed by Record
	default:
		tool := r.Step
		if _, after, ok := strings.Cut(tool, ":"); ok {
			tool = after
		}
		name = "execute_tool " + tool
		attrs = append(attrs, semconv.GenAIOperationNameExecuteTool, semconv.GenAIToolName(tool),
			attribute.String("glidepath.step", r.Step))
		if r.CallID != "" {
			attrs = append(attrs, semconv.GenAIToolCallID(r.CallID))
		}
	}
	_, sp := s.tracer.Start(ru.ctx, name, oteltrace.WithTimestamp(r.TS), oteltrace.WithSpanKind(kind),
		oteltrace.WithAttributes(attrs...))
	ru.attempts[idOf(r)] = sp
	if agent, ok := strings.CutPrefix(r.Step, "agent:"); ok && r.Key != "" {
		s.calls[r.Key] = agentCall{span: sp.SpanContext(), name: agent}
	}
}

// AttemptContext returns ctx with the span of the attempt whose
// attempt_start r is, when the sink has it: what the attempt sends carries
// its traceparent.
func (s *Sink) AttemptContext(ctx context.Context, r trace.Record) context.Context {
	if s.tracer == nil {
		return ctx
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ru := s.runs[r.RunID]
	if ru == nil {
		return ctx
	}
	if sp := ru.attempts[idOf(r)]; sp != nil {
		return oteltrace.ContextWithSpan(ctx, sp)
	}
	return ctx
}

// eventAttributes are what a run's event says, the key left out.
func eventAttributes(r trace.Record) []attribute.KeyValue {
	var a []attribute.KeyValue
	add := func(k, v string) {
		if v != "" {
			a = append(a, attribute.String(k, v))
		}
	}
	add("glidepath.step", r.Step)
	add("glidepath.state", r.State)
	add("glidepath.reason", r.Reason)
	add("glidepath.cause", r.Cause)
	add("glidepath.from", r.From)
	add("glidepath.to", r.To)
	add("glidepath.message", r.Message) // scrubbed by Record
	if r.Event == trace.Backoff {
		a = append(a, attribute.Int64("glidepath.backoff.sleep_ms", r.SleepMs), attribute.String("glidepath.backoff.source", r.Source),
			attribute.Bool("glidepath.backoff.gave_up", r.GaveUp))
	}
	if r.Attempt > 0 {
		a = append(a, attribute.Int("glidepath.attempt", r.Attempt))
	}
	return a
}
