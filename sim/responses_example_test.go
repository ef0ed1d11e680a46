package sim_test

import (
	"context"
	"fmt"

	"github.com/glidepath/glidepath/sim"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
)

// The Responses API, POST /v1/responses, with the same policy: a reasoning
// item with its summary, the tool call, then, given the call's output,
// the answer.
func ExampleNewServer_responses() {
	srv := sim.NewServer(nil)
	defer srv.Close()
	client := openai.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("unused"),
		option.WithMaxRetries(0), option.WithHTTPClient(srv.Client()))
	ctx := context.Background()
	input := responses.ResponseInputParam{responses.ResponseInputItemParamOfMessage("find cats", responses.EasyInputMessageRoleUser)}
	params := responses.ResponseNewParams{
		Model: sim.ModelID,
		Tools: []responses.ToolUnionParam{{OfFunction: &responses.FunctionToolParam{Name: "search", Strict: openai.Bool(false),
			Parameters: map[string]any{"type": "object", "properties": map[string]any{"query": map[string]any{"type": "string"}}, "required": []string{"query"}}}}},
	}
	params.Input.OfInputItemList = input
	res, err := client.Responses.New(ctx, params)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, it := range res.Output {
		switch it.Type {
		case "reasoning":
			fmt.Println("reasoning:", it.Summary[0].Text)
		case "function_call":
			fmt.Println("call:", it.Name, it.Arguments.OfString)
			input = append(input, responses.ResponseInputItemParamOfFunctionCall(it.Arguments.OfString, it.CallID, it.Name))
			input = append(input, responses.ResponseInputItemParamOfFunctionCallOutput("3 cats"))
			input[len(input)-1].OfFunctionCallOutput.CallID = openai.String(it.CallID)
		}
	}
	params.Input.OfInputItemList = input
	res, err = client.Responses.New(ctx, params)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.OutputText())
	// Output:
	// reasoning: [sim] Next: call search.
	// call: search {"query":"find cats"}
	// [sim] Answer to "find cats": search returned 3 cats.
}
