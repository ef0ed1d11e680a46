package harness_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/glidepath/glidepath/harness"
	"github.com/glidepath/glidepath/tools"
	"github.com/openai/openai-go/v3/shared"
)

// TestEachOfferHasParametersOfItsOwn checks that Offer gives every call
// the schema as decoding it makes it, however often it was offered
// before, and that a model that writes what it was offered writes only
// its own request's.
func TestEachOfferHasParametersOfItsOwn(t *testing.T) {
	for _, schema := range []string{
		`{"type":"object","properties":{"query":{"type":"string"},"n":{"type":"integer","minimum":1}},"required":["query"]}`,
		`{"type":"object","properties":{"tags":{"type":"array","items":{"enum":["a",1,null,true]}}}}`,
		`{}`,
		`null`,
		`true`,
	} {
		t.Run(schema, func(t *testing.T) {
			specs := []tools.Spec{{Name: "lookup", Parameters: json.RawMessage(schema)}}
			var want shared.FunctionParameters
			if json.Unmarshal([]byte(schema), &want) != nil {
				want = nil
			}
			first := harness.Offer(specs)[0].OfFunction.Function.Parameters
			scribble(first)
			for range 2 {
				if got := harness.Offer(specs)[0].OfFunction.Function.Parameters; !reflect.DeepEqual(got, want) {
					t.Errorf("offered %#v, want %#v", got, want)
				}
			}
		})
	}
}

// scribble writes all over a decoded JSON value, as a careless model
// might over the request it was given.
func scribble(v any) {
	switch v := v.(type) {
	case shared.FunctionParameters:
		scribble(map[string]any(v))
	case map[string]any:
		if v == nil {
			return
		}
		for k, e := range v {
			scribble(e)
			v[k] = "scribbled"
		}
		v["scribbled"] = true
	case []any:
		for i, e := range v {
			scribble(e)
			v[i] = "scribbled"
		}
	}
}
