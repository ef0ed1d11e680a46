package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"

	"github.com/glidepath/glidepath/budget"
	grun "github.com/glidepath/glidepath/internal/run"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/model"
	"github.com/glidepath/glidepath/tools"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"
)

// Run runs one agent on b, the budget the caller started, until the model
// answers (complete) or the run must land: the budget reached its reserve,
// the quiet clock fired, ctx was cancelled, the steps ran out, or the model
// failed. It is [Start], then [Session.Run], then [Session.Close]: a cfg
// that [Config.Validate] rejects is a [*ConfigError], with no result;
// otherwise Run always returns a labeled [landing.Result], complete or
// partial, within the budget.
//
// The error is non-nil for an invalid cfg, with no result, and when a sink
// could not take the run's records ([ErrTrace]), beside a result that is
// still the run's: the run goes on without its record rather than stop.
func Run(ctx context.Context, b *budget.Budget, cfg Config) (res landing.Result, err error) {
	s, rctx, err := start(ctx, b, &cfg, &res)
	if s == nil {
		return res, err
	}
	// The loop's state, the result included, is on the heap; Run's frame,
	// which stays on the stack while the run streams, holds pointers.
	l := s.newLoop()
	l.run(rctx)
	err = s.Close()
	return *l.res, err
}

// start is the start of [Run]. It is a function of its own, not inlined,
// because Run stays on the stack while the run streams and is kept small
// (issue 13): the copies of cfg that validating and starting take are
// made here, and a run refused at the door is written to *refused, Run's
// result, rather than returned: a result returned by value would be a
// temporary in Run's frame, over 200 bytes each, enough to hold the run's
// goroutine stack at 32 KB where a bare call's is 16 KB (issue 25).
//
//go:noinline
func start(ctx context.Context, b *budget.Budget, cfg *Config, refused *landing.Result) (*Session, context.Context, error) {
	if err := cfg.Validate(); err != nil {
		return nil, nil, err
	}
	if cfg.Model == nil {
		return nil, nil, &ConfigError{Field: "model", Err: errRequired}
	}
	if b == nil {
		return nil, nil, &ConfigError{Field: "budget", Err: errRequired}
	}
	s, rctx, err := startValid(ctx, b, *cfg)
	if err != nil {
		if res, ok := AtCapacity(b, cfg.RunID, err); ok {
			*refused = res
			return nil, nil, nil
		}
	}
	return s, rctx, err
}

// Run drives the session with the harness's own agent loop, on ctx, the
// run's context that [Start] returned, and returns its result: model turns
// with [Config.Model] and the tools' calls they ask for, until the model
// answers or the run must land. The conversation opens with a system
// message that explains the job and the budget, and the task as the user
// message; every request adds the budget note as its last message.
func (s *Session) Run(ctx context.Context) landing.Result {
	if !s.started() {
		return noSession()
	}
	if ctx == nil {
		ctx = s.ctx
	}
	l := s.newLoop()
	l.run(ctx)
	return *l.res
}

// loop is the state of the harness's own agent loop, which drives the
// run's machine (internal/run: when to make a turn, what a reply asks
// for, when and why to land; the one the Temporal workflow drives, issue
// 25) and performs its commands with the Session. It lives on the heap,
// and the frames that stay on the stack while a turn streams (Run, run,
// Session.turn) hold pointers to it, because a run spends most of its life
// blocked in a model stream: with the conversation, the request and the
// response in those frames the run's goroutine stack was held at 64 KB
// where a bare openai-go call holds 16 KB (issue 13; see # Stack at
// model.Client.call).
type loop struct {
	s *Session
	// What the loop reads of the machine's last command, rather than the
	// command, whose landing plan a loop never reads (issue 25 item 6).
	kind     grun.CommandKind
	parallel bool // MakeTurn
	conv     []openai.ChatCompletionMessageParamUnion
	offered  offering
	req      model.Request   // the turn about to be made
	resp     *model.Response // what the turn answered, nil while it streams
	err      error           // how the turn failed
	heard    heard           // how the turn's model attempts went unanswered
	res      *landing.Result // the run's result, once done
}

func (s *Session) newLoop() *loop {
	prompt := landing.System(s.cfg.Instructions)
	// Room for the budget note, which each request adds in place
	// (withNote) rather than in a copy of the conversation.
	conv := make([]openai.ChatCompletionMessageParamUnion, 2, 3)
	conv[0], conv[1] = openai.SystemMessage(prompt), openai.UserMessage(s.cfg.Task)
	return &loop{s: s, conv: conv}
}

// run runs the loop until the run has its result, l.res.
func (l *loop) run(ctx context.Context) {
	if l.s.cfg.Model == nil {
		l.landNoModel(ctx)
		return
	}
	l.step(ctx, grun.Begun)
	for l.res == nil {
		switch l.kind {
		case grun.MakeTurn:
			l.ask()
			l.resp, l.err = l.s.turn(ctx, l.req, &l.heard)
			l.took(ctx)
		case grun.MakeCalls:
			l.call(ctx)
			l.step(ctx, grun.CallsEnded)
		case grun.Land:
			l.land(ctx)
		case grun.Done: // an answer: a landing is the Session's (Land)
			l.answer()
		}
	}
}

// The methods run calls are kept out of its frame (go:noinline): run
// stays on the stack while a turn streams, and the machine's events and
// commands, and a result, are large values; in run's frame they held an
// idle run's stack at 32 KB where a bare openai-go call holds 16 KB
// (issue 25 item 6, as issue 13 found of Run's own frame).

// step tells the run's machine, the Session's, an event of kind, with the
// figures of now.
//
//go:noinline
func (l *loop) step(ctx context.Context, kind grun.EventKind) {
	l.heed(l.s.feed(grun.Event{Kind: kind, Figures: l.figures(ctx)}))
}

// heed keeps what the loop reads of the machine's command cmd.
func (l *loop) heed(cmd grun.Command) {
	l.kind, l.parallel = cmd.Kind, cmd.Parallel
}

// landNoModel lands a run with no model: nothing to ask, nor to land with.
//
//go:noinline
func (l *loop) landNoModel(ctx context.Context) {
	l.end(l.s.landFor(ctx, landing.CauseUpstream, nil))
}

// answer ends the run with the model's answer.
//
//go:noinline
func (l *loop) answer() { l.end(l.s.Answer(l.resp.Message.Content)) }

// figures are what the machine reads of the run before a turn.
func (l *loop) figures(ctx context.Context) grun.Figures {
	return grun.Figures{Ended: l.s.workEnded(ctx), Phase: l.s.ladder.Phase()}
}

// ask makes the turn's request, l.req: the conversation with the budget
// note, and the tools on offer (one whose ceiling is below its p50 is
// left out).
//
//go:noinline
func (l *loop) ask() {
	s := l.s
	specs := s.usable(s.cfg.Tools.Specs())
	l.req = model.Request{
		Messages: withNote(l.conv, s.note(specs)),
		Tools:    l.offered.of(specs),
		Parallel: l.parallel,
	}
	l.resp, l.err = nil, nil
}

// took tells the machine how the turn that answered l.resp or failed with
// l.err ended, in the turn machine's terms (done); what the reply said
// goes to the conversation, where a landing call can use it.
//
//go:noinline
func (l *loop) took(ctx context.Context) {
	var reply grun.Reply
	if l.err == nil {
		m := l.resp.Message
		reply = grun.Reply{Content: m.Content, ToolCalls: len(m.ToolCalls), FinishReason: l.resp.FinishReason}
		if m.Content != "" || len(m.ToolCalls) > 0 {
			l.conv = append(l.conv, AssistantMessage(m))
		}
	}
	l.heed(l.s.turnEnded(ctx, l.done(), reply, false))
}

// done is how the turn ended as its machine says: an answer after the
// attempts it made, or the TurnDone a [*model.Client]'s failure carries
// (model.TurnOf), the one the Temporal workflow hands the run's machine
// (issue 25). A Model of someone else's says only its error: the turn
// machine's rules end the turn on it (model.Ended), and how its last
// attempt went unanswered is what the turn's observer heard of it.
func (l *loop) done() model.TurnCommand {
	if l.err == nil {
		return model.TurnCommand{Kind: model.TurnDone, OK: true, N: l.resp.Attempts}
	}
	if c, ok := model.TurnOf(l.err); ok {
		return c
	}
	c := model.Ended(l.err, budget.FiguresOf(l.s.b, nil, false))
	l.s.mu.Lock()
	c.Unanswered, c.End.Mute = l.heard.unanswered, l.heard.mute
	l.s.mu.Unlock()
	return c
}

// call makes the tool calls the reply asked for and adds their results
// to the conversation: every call gets its tool message, refused and
// failed ones too, since the API rejects a conversation that leaves one
// unanswered.
//
//go:noinline
func (l *loop) call(ctx context.Context) {
	calls := l.resp.Message.ToolCalls
	asked := make([]ToolCall, len(calls))
	for i, c := range calls {
		asked[i] = ToolCall{Name: c.Function.Name, Arguments: json.RawMessage(c.Function.Arguments), ID: c.ID}
	}
	for i, res := range l.s.Call(ctx, asked...) {
		l.conv = append(l.conv, openai.ToolMessage(res.Content(), calls[i].ID))
	}
}

// land lands the run as the machine says, through the Session's landing,
// which its embedders begin too: the machine has the words.
//
//go:noinline
func (l *loop) land(ctx context.Context) {
	l.end(l.s.land(ctx, grun.Event{}, l.s.summarizer(l.conv))) // for the cause the machine's Land named
}

// end keeps the run's result.
func (l *loop) end(res landing.Result) { l.res = &res }

// summarizer is the landing call of the harness's own loop: the
// conversation so far, the budget note and the landing prompt, sent to the
// model with no tools.
func (s *Session) summarizer(conv []openai.ChatCompletionMessageParamUnion) func(context.Context, string) (string, error) {
	return func(ctx context.Context, prompt string) (string, error) {
		msgs := append(withNote(conv, s.Note()), openai.UserMessage(prompt))
		resp, err := s.turn(ctx, model.Request{Messages: msgs}, nil)
		if resp == nil {
			return "", err
		}
		return resp.Message.Content, err
	}
}

// offering is the tools field of the loop's requests, made again only when
// the tools on offer change (a setup step may register more), since
// decoding every schema at every turn is the loop's own cost per step.
type offering struct {
	specs []tools.Spec
	tools []openai.ChatCompletionToolUnionParam
}

func (o *offering) of(specs []tools.Spec) []openai.ChatCompletionToolUnionParam {
	same := func(a, b tools.Spec) bool {
		return a.Name == b.Name && a.Description == b.Description && bytes.Equal(a.Parameters, b.Parameters)
	}
	if o.specs == nil || !slices.EqualFunc(o.specs, specs, same) {
		o.specs, o.tools = specs, Offer(specs)
	}
	return o.tools
}

// Offer turns tools' specs into the tools field of an openai-go Chat
// Completions request, as the harness's own loop offers them; nil when
// there are none, so that the request carries no tools field at all (the
// landing call's must not). A schema that is not a JSON object is offered
// as no parameters. [Session.Tools] is Offer of the tools the run offers
// now.
func Offer(specs []tools.Spec) []openai.ChatCompletionToolUnionParam {
	if len(specs) == 0 {
		return nil
	}
	out := make([]openai.ChatCompletionToolUnionParam, 0, len(specs))
	for _, s := range specs {
		fd := shared.FunctionDefinitionParam{Name: s.Name}
		if s.Description != "" {
			fd.Description = openai.String(s.Description)
		}
		// Register compiled the schema, so it is JSON; one that is not an
		// object (a bare true) is sent as no parameters.
		if params, ok := decodedSchemas.of(s.Parameters); ok {
			fd.Parameters = params
		}
		out = append(out, openai.ChatCompletionFunctionTool(fd))
	}
	return out
}

// withNote returns the request's messages: the conversation and, last, a
// fresh budget note. The note is never part of the conversation, so each
// turn's replaces the one before and the conversation's prefix stays the
// same from turn to turn, as prompt caches want. It is written in the room
// past the conversation's end when there is some (newLoop leaves it), not
// in a copy of the conversation: the next message the conversation takes
// is appended there, once the request is done with (issue 25 item 6).
func withNote(conv []openai.ChatCompletionMessageParamUnion, note string) []openai.ChatCompletionMessageParamUnion {
	return append(conv, openai.SystemMessage(note))
}

// AssistantMessage turns the model's reply back into a message of the
// conversation, for the next request ([model.AssistantOf]: with the
// output items a Responses API reply came in, reasoning included): the
// harness's own loop does, and a loop of its own that accumulates a
// stream should too.
func AssistantMessage(m openai.ChatCompletionMessage) openai.ChatCompletionMessageParamUnion {
	return model.AssistantOf(m)
}
