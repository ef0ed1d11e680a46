package battery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/glidepath/glidepath/model"
	"github.com/glidepath/glidepath/sim"
)

// The Responses API under the model's faults (issue 27): the sim serves
// POST /v1/responses with the same rules as Chat Completions, and every
// system speaks it in these scenarios — Glidepath with
// model.Config.API = model.APIResponses (harness run --api responses),
// the baselines with openai-go's Responses.NewStreaming in the same loop.

// errNoEnd is a Responses stream that ended without saying how the
// response ended (no response.completed, failed or incomplete).
var errNoEnd = errors.New("battery: the stream ended before the response did")

// responsesConversation is a conversation over the Responses API, as a
// tutorial keeps one without previous_response_id: the whole input sent
// each turn, each response's output items appended to it as they came
// (a reasoning item with the call it led to, as OpenAI asks of reasoning
// models), then each call's function_call_output.
type responsesConversation struct {
	client openai.Client
	params responses.ResponseNewParams
}

func newResponsesConversation(sc *Scenario, client openai.Client, schema shared.FunctionParameters) *responsesConversation {
	params := responses.ResponseNewParams{Model: sim.ModelID}
	params.Input.OfInputItemList = responses.ResponseInputParam{
		responses.ResponseInputItemParamOfMessage(sc.task, responses.EasyInputMessageRoleUser)}
	params.Tools = []responses.ToolUnionParam{{OfFunction: &responses.FunctionToolParam{
		Name: sc.tool.name, Description: openai.String(sc.tool.description), Parameters: schema, Strict: openai.Bool(false),
	}}}
	return &responsesConversation{client: client, params: params}
}

func (c *responsesConversation) turn(ctx context.Context) (said, error) {
	stream := c.client.Responses.NewStreaming(ctx, c.params)
	defer stream.Close()
	var end *responses.Response
	for stream.Next() {
		switch ev := stream.Current(); ev.Type {
		case "response.completed", "response.failed", "response.incomplete":
			r := ev.Response
			end = &r
		}
	}
	// An error event ends the stream here: the SDK raises it.
	if err := stream.Err(); err != nil {
		return said{}, err
	}
	if end == nil {
		return said{}, errNoEnd
	}
	if end.Status != responses.ResponseStatusCompleted {
		return said{}, fmt.Errorf("response %s: %s %s", end.Status, end.Error.Code, end.Error.Message)
	}
	var s said
	for _, it := range end.Output {
		raw := json.RawMessage(it.RawJSON())
		var item responses.ResponseInputItemUnionParam
		switch it.Type {
		case "reasoning":
			r := param.Override[responses.ResponseReasoningItemParam](raw)
			item.OfReasoning = &r
		case "message":
			m := param.Override[responses.ResponseOutputMessageParam](raw)
			item.OfOutputMessage = &m
			for _, part := range it.Content {
				s.text += part.Text
			}
		case "function_call":
			f := param.Override[responses.ResponseFunctionToolCallParam](raw)
			item.OfFunctionCall = &f
			s.calls = append(s.calls, toolCall{id: it.CallID, name: it.Name, args: json.RawMessage(it.Arguments.OfString)})
		default:
			continue
		}
		c.params.Input.OfInputItemList = append(c.params.Input.OfInputItemList, item)
	}
	return s, nil
}

func (c *responsesConversation) result(call toolCall, out string) {
	item := responses.ResponseInputItemParamOfFunctionCallOutput(out)
	item.OfFunctionCallOutput.CallID = openai.String(call.id)
	c.params.Input.OfInputItemList = append(c.params.Input.OfInputItemList, item)
}

// onResponses is the fault text of a Responses scenario: where on that
// API's stream the fault sits.
const onResponses = "on the Responses API (POST /v1/responses, every system): "

// responsesScenarios are the model's faults on the Responses API, each
// the twin of a Chat Completions scenario, with fast as their tool.
func responsesScenarios(fast toolDef) []Scenario {
	responsesAPI := func(sc Scenario) Scenario {
		sc.API, sc.tool, sc.ToolCeiling = model.APIResponses, fast, time.Second
		return scenario(sc)
	}
	return []Scenario{
		responsesAPI(Scenario{
			Name:    "responses-healthy",
			Summary: "the Responses API with nothing wrong",
			Fault:   onResponses + "none: the model calls lookup, then answers",
			Budget:  2 * time.Second, Healthy: true,
		}),
		responsesAPI(Scenario{
			Name:    "responses-reasoning-cold",
			Twin:    "reasoning-cold",
			Summary: "a reasoning model silent for 1.5·Q after its opening events on each turn, nothing known of it",
			Fault: onResponses + "none: every stream sends response.created, response.in_progress and the reasoning item's " +
				"output_item.added with its headers, then nothing for 750ms (1.5·Q) before its summary; the model is cold (no E: Q alone); Q 500ms",
			Budget: reasonBudget, Quiet: reasonQuiet, Healthy: true, Silent: StallModel,
			model: reasoning(),
		}),
		responsesAPI(Scenario{
			Name:    "responses-reasoning-warm",
			Twin:    "reasoning-warm",
			Summary: "the same reasoning model on the Responses API, its p95 known from a profile",
			Fault:   onResponses + "none: as responses-reasoning-cold, with the model's p95 known (profile, E " + profileE() + "); Q 500ms",
			Budget:  reasonBudget, Quiet: reasonQuiet, Healthy: true, Silent: StallModel,
			model:        reasoning(),
			modelProfile: reasoningProfile(),
		}),
		responsesAPI(Scenario{
			Name:    "responses-hang-headers",
			Twin:    "model-hang-headers",
			Summary: "the model's server never answers a Responses request",
			Fault:   onResponses + "every request: no headers, nothing, until the client leaves; the model's p95 known (profile, E " + profileE() + "); Q 500ms",
			Budget:  reasonBudget, Quiet: reasonQuiet, Stall: StallModel,
			model:        &sim.Scenario{Rules: []sim.Rule{{Hang: true}}},
			modelProfile: reasoningProfile(),
		}),
		responsesAPI(Scenario{
			Name:    "responses-hang-after-headers",
			Twin:    "model-hang-after-headers",
			Summary: "the model's server answers, sends response.created and in_progress, then nothing",
			Fault: onResponses + "every stream: headers, response.created, response.in_progress, then nothing until the client leaves; " +
				"the model's p95 known (profile, E " + profileE() + "); Q 500ms",
			Budget: reasonBudget, Quiet: reasonQuiet, Stall: StallModel,
			model:        &sim.Scenario{Rules: []sim.Rule{{HangAfterChunks: new(2)}}},
			modelProfile: reasoningProfile(),
		}),
		responsesAPI(Scenario{
			Name:    "responses-keepalive",
			Twin:    "model-keepalive",
			Summary: "the model's Responses stream sends only keepalives",
			Fault:   onResponses + "every stream: headers, then a keepalive comment every 100ms, forever, before any event",
			Budget:  2 * time.Second, Stall: StallModel,
			model: &sim.Scenario{Rules: []sim.Rule{{Keepalive: sim.Forever, KeepaliveEvery: 100 * time.Millisecond}}},
		}),
		responsesAPI(Scenario{
			Name:    "responses-midstream",
			Twin:    "midstream",
			Summary: "the model's Responses stream is cut after its opening events",
			Fault:   onResponses + "the first 2 streams: connection closed after response.created, response.in_progress and output_item.added",
			Budget:  2 * time.Second,
			model:   &sim.Scenario{Rules: []sim.Rule{{Times: 2, CloseAfterChunks: new(3)}}},
		}),
		responsesAPI(Scenario{
			Name:    "responses-error-429",
			Twin:    "429-short",
			Summary: "the model rate-limits inside its Responses stream",
			Fault:   onResponses + `the first 2 streams: headers (200), the opening events, then an error event rate_limit_exceeded (a 429 in the stream, no Retry-After), and the stream ends`,
			Budget:  2 * time.Second,
			model:   &sim.Scenario{Rules: []sim.Rule{{Times: 2, StreamError: "rate_limit_exceeded"}}},
		}),
		responsesAPI(Scenario{
			Name:    "responses-failed-500",
			Summary: "the model's Responses stream fails with a server error",
			Fault:   onResponses + `the first stream: headers (200), the opening events, then response.failed with code server_error (a 500 in the stream)`,
			Budget:  2 * time.Second,
			model:   &sim.Scenario{Rules: []sim.Rule{{Times: 1, Failed: "server_error"}}},
		}),
	}
}
