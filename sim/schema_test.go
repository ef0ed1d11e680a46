package sim

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestArgumentsSatisfyTheToolSchema(t *testing.T) {
	cases := []struct {
		name   string
		schema string
		want   string
	}{
		{"no parameters", ``, `{}`},
		{"parameters that are not JSON", `{nope`, `{}`},
		{"only required properties", `{"type":"object","properties":{"query":{"type":"string"},"page":{"type":"integer"}},"required":["query"]}`, `{"query":"find cats"}`},
		{"each type's simplest value", `{"type":"object","required":["n","x","b","l","o","z"],"properties":{
			"n":{"type":"integer"},"x":{"type":"number"},"b":{"type":"boolean"},
			"l":{"type":"array","items":{"type":"string"}},"o":{"type":"object"},"z":{"type":"null"}}}`,
			`{"b":true,"l":[],"n":1,"o":{},"x":1,"z":null}`},
		{"the first enum value", `{"type":"object","required":["unit"],"properties":{"unit":{"type":"string","enum":["c","f"]}}}`, `{"unit":"c"}`},
		{"a const", `{"type":"object","required":["v"],"properties":{"v":{"const":2}}}`, `{"v":2}`},
		{"numbers moved into their bounds", `{"type":"object","required":["a","b","c","d"],"properties":{
			"a":{"type":"integer","minimum":5},"b":{"type":"integer","maximum":0},
			"c":{"type":"integer","exclusiveMinimum":1},"d":{"type":"number","minimum":0.5,"multipleOf":0.25,"maximum":0.75}}}`,
			`{"a":5,"b":0,"c":2,"d":0.75}`},
		{"arrays of their minimum length", `{"type":"object","required":["ids"],"properties":{"ids":{"type":"array","minItems":2,"items":{"type":"integer"}}}}`, `{"ids":[1,1]}`},
		{"nested objects", `{"type":"object","required":["filter"],"properties":{"filter":{"type":"object","required":["q"],"properties":{"q":{"type":"string"}}}}}`, `{"filter":{"q":"find cats"}}`},
		{"formats get placeholders", `{"type":"object","required":["u","e","d","t"],"properties":{
			"u":{"type":"string","format":"uri"},"e":{"type":"string","format":"email"},
			"d":{"type":"string","format":"date"},"t":{"type":"string","format":"date-time"}}}`,
			`{"d":"2000-01-01","e":"sim@example.com","t":"2000-01-01T00:00:00Z","u":"https://example.com/sim"}`},
		{"string lengths", `{"type":"object","required":["code","query"],"properties":{
			"code":{"type":"string","minLength":15},"query":{"type":"string","maxLength":4}}}`,
			`{"code":"sim-e1c3b50bxxx","query":"find"}`},
		{"nullable types", `{"type":"object","required":["q"],"properties":{"q":{"type":["null","string"]}}}`, `{"q":"find cats"}`},
		{"the first non-null alternative", `{"type":"object","required":["v"],"properties":{"v":{"anyOf":[{"type":"null"},{"type":"integer"}]}}}`, `{"v":1}`},
		{"local references", `{"type":"object","required":["p"],"properties":{"p":{"$ref":"#/$defs/point"}},
			"$defs":{"point":{"type":"object","required":["x"],"properties":{"x":{"type":"number"}}}}}`, `{"p":{"x":1}}`},
		{"allOf merged", `{"allOf":[{"type":"object","required":["a"],"properties":{"a":{"type":"boolean"}}},{"required":["query"],"properties":{"query":{"type":"string"}}}]}`,
			`{"a":true,"query":"find cats"}`},
		{"a recursive schema ends", `{"type":"object","required":["next"],"properties":{"next":{"$ref":"#"}}}`,
			`{"next":{"next":{"next":{"next":{"next":{"next":{"next":{"next":{"next":null}}}}}}}}}`},
		{"a default", `{"type":"object","required":["mode"],"properties":{"mode":{"type":"string","default":"fast"}}}`, `{"mode":"fast"}`},
		{"a pattern", `{"type":"object","required":["code","query"],"properties":{
			"code":{"type":"string","pattern":"^[A-Z]{3}-[0-9]+$"},"query":{"type":"string","pattern":"cat"}}}`,
			`{"code":"AAA-0","query":"find cats"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := arguments([]byte(tc.schema), "find cats", 0, "tool")
			if got != tc.want {
				t.Errorf("arguments = %s\nwant        %s", got, tc.want)
			}
		})
	}
}

func TestArgumentsOtherStringsAreShortAndVaryWithTheSeed(t *testing.T) {
	schema := []byte(`{"type":"object","required":["sku"],"properties":{"sku":{"type":"string"}}}`)
	a, b := arguments(schema, "task", 1, "lookup"), arguments(schema, "task", 2, "lookup")
	if a == b || !strings.HasPrefix(a, `{"sku":"sim-`) || len(a) != len(`{"sku":"sim-12345678"}`) {
		t.Errorf("seed 1 gave %s, seed 2 gave %s; want distinct short sim- strings", a, b)
	}
	if again := arguments(schema, "task", 1, "lookup"); again != a {
		t.Errorf("the same seed gave %s and %s", a, again)
	}
}

func TestArgumentsOfASchemaThatBranchesAsItRecursesStaySmall(t *testing.T) {
	// Each level requires eight properties that refer back to the root:
	// without a bound on values, 8^16 of them.
	var props, req []string
	for _, name := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		props = append(props, `"`+name+`":{"$ref":"#"}`)
		req = append(req, `"`+name+`"`)
	}
	schema := `{"type":"object","required":[` + strings.Join(req, ",") + `],"properties":{` + strings.Join(props, ",") + `}}`
	got := arguments([]byte(schema), "task", 0, "tool")
	if len(got) > 64<<10 {
		t.Errorf("arguments are %d bytes, want a bounded answer", len(got))
	}
	if !strings.HasPrefix(got, `{"a":{"a":`) {
		t.Errorf("arguments = %.80s…, want the required properties filled in as far as the bound allows", got)
	}
}

func TestMatchingBuildsAShortStringThePatternMatches(t *testing.T) {
	cases := []struct {
		pattern string
		want    string // "" with ok false: none built
		ok      bool
	}{
		{`^[0-9]{5}$`, "00000", true},
		{`^[A-Z]{2}-\d+$`, "AA-0", true},
		{`^(cat|dog)s?$`, "cat", true},
		{`^[^"]+$`, "a", true},
		{`^[!-/]$`, "!", true},
		{`^\p{Greek}+$`, "Ͱ", true},
		{`(?i)^abc$`, "abc", true},
		{`x{3,}`, "xxx", true},
		{`^$`, "", true},
		{`\bcat\b`, "cat", true},
		{`(a{1000}){5}`, "", false}, // too long
		{`a\bb`, "", false},         // "ab" has no boundary where the pattern wants one
		{`(?!x)`, "", false},        // not Go syntax
	}
	for _, tc := range cases {
		got, ok := matching(tc.pattern)
		if got != tc.want || ok != tc.ok {
			t.Errorf("matching(%q) = %q, %v; want %q, %v", tc.pattern, got, ok, tc.want, tc.ok)
		}
	}
}

func TestInstanceFillsAnswersAndEveryPropertyWhenStrict(t *testing.T) {
	schema := map[string]any{"type": "object", "required": []any{"answer"}, "properties": map[string]any{
		"answer": map[string]any{"type": "string"}, "question": map[string]any{"type": "string"},
		"tags": map[string]any{"type": "array", "items": map[string]any{"type": "string"}}}}
	for _, tc := range []struct {
		all  bool
		want string
	}{
		{false, `{"answer":"[sim] done"}`},
		{true, `{"answer":"[sim] done","question":"find cats","tags":[]}`},
	} {
		b, _ := json.Marshal(instance(schema, "[sim] done", "find cats", 0, "r", tc.all))
		if string(b) != tc.want {
			t.Errorf("all=%v: %s, want %s", tc.all, b, tc.want)
		}
	}
}
