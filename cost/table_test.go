package cost_test

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/glidepath/glidepath/cost"
	"github.com/glidepath/glidepath/sim"
)

func mustParse(t *testing.T, data string) *cost.Table {
	t.Helper()
	tab, err := cost.Parse([]byte(data))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return tab
}

func readPrices(t *testing.T) *cost.Table {
	t.Helper()
	data, err := os.ReadFile("testdata/prices.json")
	if err != nil {
		t.Fatal(err)
	}
	return mustParse(t, string(data))
}

func TestParseReadsTheFieldsOfALiteLLMEntry(t *testing.T) {
	tab := readPrices(t)
	cases := []struct {
		name, model string
		want        cost.Price
	}{
		{"a chat model with cached and reasoning prices left out takes its input and output prices", "example-chat",
			cost.Price{Model: "example-chat", Input: 2_500_000, CacheRead: 2_500_000, Output: 10_000_000, Reasoning: 10_000_000, MaxOutput: 16384}},
		{"a reasoning model's cached and reasoning prices are read exactly", "example-reasoner",
			cost.Price{Model: "example-reasoner", Input: 2_187_500, CacheRead: 546_875, Output: 17_500_000, Reasoning: 20_000_000, MaxOutput: 64000}},
		{"max_tokens stands for max_output_tokens when that is absent", "legacy-chat",
			cost.Price{Model: "legacy-chat", Input: 12_500_000, CacheRead: 12_500_000, Output: 12_500_000, Reasoning: 12_500_000, MaxOutput: 8191}},
		{"a model priced at zero is free, not unknown", "local-free",
			cost.Price{Model: "local-free"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := tab.Lookup(tc.model)
			if !ok || got != tc.want {
				t.Errorf("Lookup(%q) = %+v, %v; want %+v", tc.model, got, ok, tc.want)
			}
			if _, err := tab.Require(tc.model); err != nil {
				t.Errorf("Require(%q): %v", tc.model, err)
			}
		})
	}
	if _, ok := tab.Lookup("sample_spec"); ok {
		t.Error(`the "sample_spec" entry was read as a model`)
	}
}

func TestParseReportsEveryBadPriceNamingTheModelAndField(t *testing.T) {
	cases := []struct {
		name string
		data string
		want []string // each *PriceError's model/field, in order
	}{
		{"a negative price", `{"m": {"input_cost_per_token": -1e-6, "output_cost_per_token": 1e-6}}`,
			[]string{"m/input_cost_per_token"}},
		{"a price written as a string", `{"m": {"input_cost_per_token": 1e-6, "output_cost_per_token": "0.000003"}}`,
			[]string{"m/output_cost_per_token"}},
		{"a price too large for money", `{"m": {"input_cost_per_token": 1e30}}`,
			[]string{"m/input_cost_per_token"}},
		{"a negative token limit", `{"m": {"max_output_tokens": -5}}`,
			[]string{"m/max_output_tokens"}},
		{"a bad legacy limit beside a good one", `{"m": {"max_output_tokens": 5, "max_tokens": "LEGACY"}}`,
			[]string{"m/max_tokens"}},
		{"an entry that is not an object", `{"m": 3}`, []string{"m/"}},
		{"every bad field of every model, models in name order",
			`{"z": {"input_cost_per_token": true}, "a": {"output_cost_per_token": -1, "cache_read_input_token_cost": [1]}}`,
			[]string{"a/output_cost_per_token", "a/cache_read_input_token_cost", "z/input_cost_per_token"}},
		{"a model named by the empty string", `{"": {"output_cost_per_token": ""}}`, []string{"/output_cost_per_token"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tab, err := cost.Parse([]byte(tc.data))
			if tab != nil || !errors.Is(err, cost.ErrBadPrices) {
				t.Fatalf("Parse = %v, %v; want no table and ErrBadPrices", tab, err)
			}
			var got []string
			for _, e := range unjoin(err) {
				pe, ok := errors.AsType[*cost.PriceError](e)
				if !ok {
					t.Fatalf("%T %v is not a *PriceError", e, e)
				}
				got = append(got, pe.Model+"/"+pe.Field)
				if !strings.Contains(pe.Error(), strconv.Quote(pe.Model)) {
					t.Errorf("%q does not name the model", pe.Error())
				}
			}
			if strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("errors name %v, want %v\n%v", got, tc.want, err)
			}
		})
	}
}

// unjoin returns the errors an errors.Join holds, or err alone.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

func TestAFileThatIsNotOneJSONObjectIsABadPriceTable(t *testing.T) {
	for _, data := range []string{`[1, 2]`, `{"m": {"input_cost_per_token": 1e-6`, ``, `{"m": {}} {}`, `null`} {
		tab, err := cost.Parse([]byte(data))
		if tab != nil || !errors.Is(err, cost.ErrBadPrices) || !strings.HasPrefix(err.Error(), "cost: bad price table: ") {
			t.Errorf("Parse(%q) = %v, %v; want ErrBadPrices", data, tab, err)
		}
	}
}

func TestABadPriceErrorQuotesTheValueAndTheReason(t *testing.T) {
	_, err := cost.Parse([]byte(`{"gpt-x": {"output_cost_per_token": -0.5}}`))
	want := `cost: bad price of "gpt-x": output_cost_per_token -0.5: must not be negative`
	if err == nil || err.Error() != want {
		t.Errorf("error = %v, want %s", err, want)
	}
}

func TestALaterEntryOfTheSameModelWinsAsInLiteLLM(t *testing.T) {
	tab := mustParse(t, `{"m": {"input_cost_per_token": 1e-6, "output_cost_per_token": 1e-6},
		"m": {"input_cost_per_token": 2e-6, "output_cost_per_token": 3e-6}}`)
	if p, _ := tab.Lookup("m"); p.Input != 2*cost.Microdollar || p.Output != 3*cost.Microdollar {
		t.Errorf("Lookup = %+v, want the second entry's prices", p)
	}
}

func TestLookupTriesTheNameWithoutItsProviderPrefix(t *testing.T) {
	tab := readPrices(t)
	cases := []struct{ name, ask, found string }{
		{"an exact name is found", "example-chat", "example-chat"},
		{"a provider prefix is dropped when the full name is unknown", "openai/example-chat", "example-chat"},
		{"an exact name with a prefix wins over the one without", "openrouter/example-chat", "openrouter/example-chat"},
		{"prefixes are dropped one at a time", "gateway/openai/legacy-chat", "legacy-chat"},
		{"an unknown model is not found", "openai/other", ""},
		{"a name ending in a slash is not found", "example-chat/", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, ok := tab.Lookup(tc.ask)
			if ok != (tc.found != "") || p.Model != tc.found {
				t.Errorf("Lookup(%q) found %q, %v; want %q", tc.ask, p.Model, ok, tc.found)
			}
		})
	}
}

func TestRequireReportsAModelWhosePriceIsNotKnown(t *testing.T) {
	tab := readPrices(t)
	cases := []struct{ name, model, field, msg string }{
		{"a model no table knows", "gpt-unknown", "",
			`cost: no price for model "gpt-unknown": not in the price table (--prices FILE)`},
		{"a model without token prices, as an image model is", "1024-x-1024/example-image", "input_cost_per_token",
			`cost: no price for model "1024-x-1024/example-image": its entry has no input_cost_per_token`},
		{"a model with an input price and no output price", "half", "output_cost_per_token",
			`cost: no price for model "half": its entry has no output_cost_per_token`},
	}
	tab = tab.Merge(mustParse(t, `{"half": {"input_cost_per_token": 1e-6}}`))
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, ok := tab.Lookup(tc.model); ok != (tc.field != "") {
				t.Errorf("Lookup(%q) found %v; a model with a missing price is found", tc.model, ok)
			}
			_, err := tab.Require(tc.model)
			ne, ok := errors.AsType[*cost.NoPriceError](err)
			if !ok || !errors.Is(err, cost.ErrNoPrice) || ne.Field != tc.field || err.Error() != tc.msg {
				t.Errorf("Require(%q) = %v, want %s", tc.model, err, tc.msg)
			}
		})
	}
}

func TestMergeReplacesAModelsWholeEntry(t *testing.T) {
	base := mustParse(t, `{"m": {"input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6, "max_tokens": 100}, "n": {"input_cost_per_token": 1e-6, "output_cost_per_token": 1e-6}}`)
	over := mustParse(t, `{"m": {"input_cost_per_token": 5e-6, "output_cost_per_token": 6e-6}}`)
	got := base.Merge(over)
	if p, _ := got.Lookup("m"); p != (cost.Price{Model: "m", Input: 5e6, CacheRead: 5e6, Output: 6e6, Reasoning: 6e6}) {
		t.Errorf("merged m = %+v, want over's entry whole (no MaxOutput from base)", p)
	}
	if _, ok := got.Lookup("n"); !ok || got.Len() != 2 {
		t.Errorf("merged table lost a model of the base: %d models", got.Len())
	}
	if p, _ := base.Lookup("m"); p.Input != cost.Microdollar {
		t.Error("Merge changed the table it was called on")
	}
}

func TestTheBuiltinTablePricesTheSimulatedModel(t *testing.T) {
	if cost.SimModel != sim.ModelID {
		t.Fatalf("cost.SimModel = %q, sim.ModelID = %q", cost.SimModel, sim.ModelID)
	}
	p, err := cost.Builtin().Require(sim.ModelID)
	if err != nil {
		t.Fatal(err)
	}
	if p.Input <= 0 || p.Output <= 0 || p.CacheRead > p.Input {
		t.Errorf("sim's price %+v", p)
	}
}

func TestLoadMergesTheFileOverTheBuiltinTable(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "prices.json")
	if err := os.WriteFile(good, []byte(`{"sim": {"input_cost_per_token": 1e-3, "output_cost_per_token": 2e-3}, "m": {"input_cost_per_token": 0, "output_cost_per_token": 0}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	tab, err := cost.Load(good)
	if err != nil {
		t.Fatal(err)
	}
	if p, _ := tab.Lookup("sim"); p.Input != cost.Dollar/1000 {
		t.Errorf("the file's sim price did not replace the built-in one: %+v", p)
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"m": {"output_cost_per_token": "x"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := cost.Load(bad); !errors.Is(err, cost.ErrBadPrices) || !strings.HasPrefix(err.Error(), bad+": ") {
		t.Errorf("Load(bad) = %v, want ErrBadPrices prefixed by the file name", err)
	}
	if _, err := cost.Load(filepath.Join(dir, "none.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load(missing) = %v, want os.ErrNotExist", err)
	}
}

func TestAZeroOrNilTableKnowsNothing(t *testing.T) {
	for _, tab := range []*cost.Table{nil, {}} {
		if _, ok := tab.Lookup("sim"); ok || tab.Len() != 0 {
			t.Errorf("%v knows sim", tab)
		}
		if _, err := tab.Require("sim"); !errors.Is(err, cost.ErrNoPrice) {
			t.Errorf("Require = %v", err)
		}
		if got := tab.Merge(cost.Builtin()); got.Len() != 1 {
			t.Errorf("Merge over %v has %d models", tab, got.Len())
		}
	}
}
