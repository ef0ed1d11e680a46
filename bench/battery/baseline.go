package battery

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/cenkalti/backoff/v5"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/glidepath/glidepath/model"
	"github.com/glidepath/glidepath/sim"
)

// maxTurns bounds a baseline's loop: the sim answers on its second turn
// when nothing goes wrong.
const maxTurns = 10

// loop is an agent loop as tutorials write it: ask the model, run the
// tools it asks for, hand their results back, until it answers. The
// baselines differ only in how they make one model turn and one tool call;
// the conversation is the scenario's API's (chat or responses), the same
// loop either way.
type loop struct {
	w    *world
	log  *runLog
	conv conversation
	turn func(ctx context.Context) (said, error) // one turn of conv
	call func(ctx context.Context, name string, args json.RawMessage) (string, error)
}

// A conversation is a baseline's side of its talk with the model, in the
// shapes of the API it speaks.
type conversation interface {
	// turn streams one model turn and, when it succeeded, keeps the
	// model's reply in the conversation.
	turn(ctx context.Context) (said, error)
	// result keeps a tool call's result for the next turn.
	result(call toolCall, out string)
}

// said is one model turn as the loop reads it: an answer, or calls.
type said struct {
	text  string
	calls []toolCall
}

type toolCall struct {
	id, name string
	args     json.RawMessage
}

// newConversation starts the scenario's task in its API, on client.
func newConversation(sc *Scenario, client openai.Client) (conversation, error) {
	var schema shared.FunctionParameters
	if err := json.Unmarshal(sc.tool.params, &schema); err != nil {
		return nil, err
	}
	if sc.API == model.APIResponses {
		return newResponsesConversation(sc, client, schema), nil
	}
	return &chatConversation{client: client, params: openai.ChatCompletionNewParams{
		Model:    sim.ModelID,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(sc.task)},
		Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{
			Name: sc.tool.name, Description: openai.String(sc.tool.description), Parameters: schema,
		})},
	}}, nil
}

// chatConversation is a conversation over Chat Completions.
type chatConversation struct {
	client openai.Client
	params openai.ChatCompletionNewParams
}

func (c *chatConversation) turn(ctx context.Context) (said, error) {
	msg, err := StreamTurn(ctx, c.client, c.params)
	if err != nil {
		return said{}, err
	}
	c.params.Messages = append(c.params.Messages, msg.ToParam())
	s := said{text: msg.Content}
	for _, tc := range msg.ToolCalls {
		s.calls = append(s.calls, toolCall{id: tc.ID, name: tc.Function.Name, args: json.RawMessage(tc.Function.Arguments)})
	}
	return s, nil
}

func (c *chatConversation) result(call toolCall, out string) {
	c.params.Messages = append(c.params.Messages, openai.ToolMessage(out, call.id))
}

func (l *loop) run(ctx context.Context) outcome {
	for range maxTurns {
		s, err := l.turn(ctx)
		if err != nil {
			return outcome{err: err}
		}
		if len(s.calls) == 0 {
			return outcome{answer: s.text}
		}
		for _, tc := range s.calls {
			out, err := l.call(ctx, tc.name, tc.args)
			if err != nil {
				if ctx.Err() != nil {
					return outcome{err: context.Cause(ctx)}
				}
				out = "error: " + err.Error()
			}
			l.conv.result(tc, out)
		}
	}
	return outcome{err: fmt.Errorf("no answer after %d turns", maxTurns)}
}

// runDefaults is baseline (a): openai-go with its defaults and a per-call
// timeout on each tool call, no tool retries.
func runDefaults(ctx context.Context, w *world, log *runLog) outcome {
	client := openai.NewClient(option.WithBaseURL(w.sim.URL), option.WithHTTPClient(w.sim.Client()), option.WithAPIKey("sim"))
	conv, err := newConversation(w.sc, client)
	if err != nil {
		return outcome{err: err}
	}
	l := &loop{w: w, log: log, conv: conv}
	l.turn = func(ctx context.Context) (said, error) {
		s, err := conv.turn(ctx)
		if err != nil && deadlineEnded(ctx) {
			// No timeout of its own: only the battery's cap ends it, and
			// that is a deadline too (SPEC §7: doomed, whoever set it),
			// though not the system noticing anything.
			log.cut("model", false, false, time.Now())
		}
		return s, err
	}
	l.call = func(ctx context.Context, name string, args json.RawMessage) (string, error) {
		return l.timedCall(ctx, name, args, "")
	}
	return l.run(ctx)
}

// runPerCall is baseline (b): a timeout on every request, model and tool,
// and a fixed 3-attempt exponential backoff (cenkalti/backoff/v5 with its
// defaults: 500ms, ×1.5, ±50%) around every call, writes retried like
// reads, each attempt a new request. The SDK's own retries are off, so
// that the 3 attempts are what they say.
func runPerCall(ctx context.Context, w *world, log *runLog) outcome {
	return perCall(ctx, w, log, false)
}

// runPerCallKeyed is baseline (c): per-call, and a stable
// Idempotency-Key minted once per logical tool call, before its first
// attempt, and sent on every attempt: the best loop people write without
// a budget. The tool server dedupes keyed requests (tools/kit: a key of a
// finished call gets its stored outcome, a key of a running call follows
// it), so this baseline should commit no write twice.
func runPerCallKeyed(ctx context.Context, w *world, log *runLog) outcome {
	return perCall(ctx, w, log, true)
}

func perCall(ctx context.Context, w *world, log *runLog, keyed bool) outcome {
	client := openai.NewClient(option.WithBaseURL(w.sim.URL), option.WithHTTPClient(w.sim.Client()),
		option.WithAPIKey("sim"), option.WithMaxRetries(0))
	conv, err := newConversation(w.sc, client)
	if err != nil {
		return outcome{err: err}
	}
	l := &loop{w: w, log: log, conv: conv}
	l.turn = func(ctx context.Context) (said, error) {
		return backoff.Retry(ctx, func() (said, error) {
			actx, cancel := context.WithTimeout(ctx, w.sc.ModelTimeout)
			defer cancel()
			s, err := conv.turn(actx)
			if err != nil && deadlineEnded(actx) {
				log.cut("model", false, timedOut(ctx, actx), time.Now())
			}
			return s, err
		}, backoff.WithMaxTries(3))
	}
	l.call = func(ctx context.Context, name string, args json.RawMessage) (string, error) {
		key := ""
		if keyed {
			key = rand.Text() // once per logical call, before its first attempt
		}
		return backoff.Retry(ctx, func() (string, error) {
			return l.timedCall(ctx, name, args, key)
		}, backoff.WithMaxTries(3))
	}
	return l.run(ctx)
}

// timedOut reports whether actx, an attempt's context under ctx, ended by
// its own timeout rather than because ctx ended.
func timedOut(ctx, actx context.Context) bool {
	return ctx.Err() == nil && errors.Is(actx.Err(), context.DeadlineExceeded)
}

// deadlineEnded reports whether ctx ended by a deadline: its own timeout
// or one above it, the battery's cap included.
func deadlineEnded(ctx context.Context) bool {
	return errors.Is(ctx.Err(), context.DeadlineExceeded)
}

// timedCall POSTs one tool call under context.WithTimeout(the tool's
// ceiling), with key as its Idempotency-Key (none when key is ""), and
// reads its JSON answer.
func (l *loop) timedCall(ctx context.Context, name string, args json.RawMessage, key string) (string, error) {
	tctx, cancel := context.WithTimeout(ctx, l.w.sc.ToolCeiling)
	defer cancel()
	out, err := postTool(tctx, l.w.client, l.w.url()+"/tools/"+name, args, key)
	if err != nil && deadlineEnded(tctx) {
		l.log.cut("tool:"+name, false, timedOut(ctx, tctx), time.Now())
	}
	return out, err
}

// postTool is a tool call as a tutorial writes it: POST the arguments as
// JSON, decode the JSON answer; with key as its Idempotency-Key unless it
// is "".
func postTool(ctx context.Context, hc *http.Client, url string, args json.RawMessage, key string) (string, error) {
	if !json.Valid(args) {
		args = json.RawMessage(`{}`)
	}
	body, err := json.Marshal(map[string]json.RawMessage{"arguments": args})
	if err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		_ = json.Unmarshal(data, &e)
		return "", fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(e.Error.Message))
	}
	var answer struct {
		Output json.RawMessage `json:"output"`
	}
	if err := json.Unmarshal(data, &answer); err != nil {
		return "", err
	}
	return string(answer.Output), nil
}

// StreamTurn streams one chat completion and accumulates its message.
func StreamTurn(ctx context.Context, c openai.Client, params openai.ChatCompletionNewParams) (openai.ChatCompletionMessage, error) {
	stream := c.Chat.Completions.NewStreaming(ctx, params)
	defer stream.Close()
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		return openai.ChatCompletionMessage{}, err
	}
	if len(acc.Choices) == 0 {
		return openai.ChatCompletionMessage{}, errors.New("empty answer")
	}
	return acc.Choices[0].Message, nil
}
