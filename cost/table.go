package cost

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
)

// SimModel is the model the simulated server serves (sim.ModelID), priced
// by the built-in table. The value is written here rather than imported so
// that this package stays free of the server; a test checks they agree.
const SimModel = "sim"

// The fields of a LiteLLM entry a Table reads; the rest are ignored.
const (
	fieldInput     = "input_cost_per_token"
	fieldCacheRead = "cache_read_input_token_cost"
	fieldOutput    = "output_cost_per_token"
	fieldReasoning = "output_cost_per_reasoning_token"
	fieldMaxOutput = "max_output_tokens"
	fieldMaxTokens = "max_tokens"
)

// sampleSpec is the entry of LiteLLM's file that documents the others; its
// values are descriptions, not prices.
const sampleSpec = "sample_spec"

// A Table is the price of each model it knows, by name. The zero Table is
// valid and knows none. A Table is not changed after it is made, so it may
// be read from many goroutines.
type Table struct {
	prices map[string]entry
}

// entry is a model's price and the first token price its file left out,
// which only a run under a cost cap needs ([Table.Require]).
type entry struct {
	price   Price
	missing string
}

// Builtin returns a table that knows the simulated model, [SimModel]:
// $1.00 per million input tokens, $0.25 per million cached ones and $4.00
// per million output tokens, reasoning included.
func Builtin() *Table {
	return &Table{prices: map[string]entry{SimModel: {price: Price{
		Model: SimModel, Input: Microdollar, CacheRead: Microdollar / 4,
		Output: 4 * Microdollar, Reasoning: 4 * Microdollar,
	}}}}
}

// Parse reads a price table in the format of LiteLLM's
// model_prices_and_context_window.json: one JSON object whose keys are
// model names and whose values are objects of fields. Of these it reads
// input_cost_per_token, output_cost_per_token (USD per token),
// cache_read_input_token_cost (default: the input price),
// output_cost_per_reasoning_token (default: the output price), and
// max_output_tokens, else max_tokens, rounded to a whole token (LiteLLM
// calls max_tokens legacy, and where a provider gives no output limit it
// holds the input limit: an overestimate, never too small). It ignores
// every other field and the entry "sample_spec". A model listed twice
// takes its last entry, as LiteLLM's own loader does: the published file
// has held duplicates more than once, and a table must load it.
//
// A file that is not one JSON object is an error matching
// [ErrBadPrices]. A price or limit that is negative, not a JSON number
// or too large is a [*PriceError] naming the model and field; Parse
// reports every such error at once, joined, in the order of model names,
// and returns no table. A model without a token price is not an error
// here: it is one when [Table.Require] is asked for its price.
func Parse(data []byte) (*Table, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadPrices, err)
	}
	if raw == nil { // "null" decodes into a nil map without an error
		return nil, fmt.Errorf("%w: null, not an object of models", ErrBadPrices)
	}
	t := &Table{prices: make(map[string]entry, len(raw))}
	var errs []error
	for _, model := range slices.Sorted(maps.Keys(raw)) {
		if model == sampleSpec {
			continue
		}
		e, bad := parseEntry(model, raw[model])
		if len(bad) > 0 {
			errs = append(errs, bad...)
			continue
		}
		t.prices[model] = e
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return t, nil
}

// Load returns the built-in table with the table in the file name merged
// over it ([Table.Merge]), as --prices FILE asks.
func Load(name string) (*Table, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("cost: %w", err)
	}
	t, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return Builtin().Merge(t), nil
}

// parseEntry reads one model's entry, with an error for each bad field.
func parseEntry(model string, raw json.RawMessage) (entry, []error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return entry{}, []error{&PriceError{Model: model, Value: quote(raw), Err: errNotObject}}
	}
	r := fieldReader{model: model, fields: fields}
	e := entry{price: Price{Model: model}}
	var hasIn, hasOut, hasCache, hasReasoning bool
	e.price.Input, hasIn = r.money(fieldInput)
	e.price.Output, hasOut = r.money(fieldOutput)
	e.price.CacheRead, hasCache = r.money(fieldCacheRead)
	e.price.Reasoning, hasReasoning = r.money(fieldReasoning)
	if !hasCache {
		e.price.CacheRead = e.price.Input
	}
	if !hasReasoning {
		e.price.Reasoning = e.price.Output
	}
	// Both limits are read, so that a bad one is reported even when the
	// other is the one used.
	maxOut, hasMaxOut := r.count(fieldMaxOutput)
	maxTokens, _ := r.count(fieldMaxTokens)
	e.price.MaxOutput = maxTokens
	if hasMaxOut {
		e.price.MaxOutput = maxOut
	}
	switch {
	case !hasIn:
		e.missing = fieldInput
	case !hasOut:
		e.missing = fieldOutput
	}
	return e, r.errs
}

var errNotObject = errors.New("not an object")

// fieldReader reads the fields of one entry, keeping every error.
type fieldReader struct {
	model  string
	fields map[string]json.RawMessage
	errs   []error
}

// money reads a price in dollars per token; ok is false when it is absent
// or null, or bad (an error is kept).
func (r *fieldReader) money(field string) (Money, bool) {
	n, ok := r.number(field, picoDigits)
	return Money(n), ok
}

// count reads a whole number of tokens.
func (r *fieldReader) count(field string) (int64, bool) {
	return r.number(field, 0)
}

func (r *fieldReader) number(field string, scale int) (int64, bool) {
	raw, ok := r.fields[field]
	if !ok || string(raw) == "null" {
		return 0, false
	}
	var err error
	var n int64
	if len(raw) == 0 || raw[0] != '-' && (raw[0] < '0' || raw[0] > '9') {
		err = errNotNumber // a string, a bool, an object: JSON's numbers start so
	} else {
		n, err = parseFixed(string(raw), scale)
	}
	if err != nil {
		r.errs = append(r.errs, &PriceError{Model: r.model, Field: field, Value: quote(raw), Err: err})
		return 0, false
	}
	return n, true
}

// quote returns raw for an error message, cut to a readable length.
func quote(raw json.RawMessage) string {
	const most = 64
	raw = bytes.TrimSpace(raw)
	if len(raw) > most {
		return string(raw[:most]) + "…"
	}
	return string(raw)
}

// Merge returns a table with every model of t and of over, over's entry
// replacing t's whole for a model both know: what a user's file says of a
// model is its price, not a patch on the built-in one. Either may be nil.
func (t *Table) Merge(over *Table) *Table {
	m := &Table{prices: make(map[string]entry)}
	if t != nil {
		maps.Copy(m.prices, t.prices)
	}
	if over != nil {
		maps.Copy(m.prices, over.prices)
	}
	return m
}

// Lookup returns the price of model: the entry of that name, else of the
// name without its leading "provider/" segments, one at a time
// ("openrouter/openai/gpt-4o", then "openai/gpt-4o", then "gpt-4o"). The
// Price's Model is the name found. A model whose file leaves out a token
// price is found, with that price zero; [Table.Require] reports it.
func (t *Table) Lookup(model string) (Price, bool) {
	e, ok := t.find(model)
	return e.price, ok
}

// Require is [Table.Lookup] for a run under a cost cap, which cannot
// spend money it cannot count: a model the table does not know, or one
// without an input or output price, is a [*NoPriceError].
func (t *Table) Require(model string) (Price, error) {
	e, ok := t.find(model)
	if !ok {
		return Price{}, &NoPriceError{Model: model}
	}
	if e.missing != "" {
		return Price{}, &NoPriceError{Model: e.price.Model, Field: e.missing}
	}
	return e.price, nil
}

func (t *Table) find(model string) (entry, bool) {
	if t == nil {
		return entry{}, false
	}
	for name := model; ; {
		if e, ok := t.prices[name]; ok {
			return e, true
		}
		_, rest, cut := strings.Cut(name, "/")
		if !cut || rest == "" {
			return entry{}, false
		}
		name = rest
	}
}

// Len returns how many models t knows.
func (t *Table) Len() int {
	if t == nil {
		return 0
	}
	return len(t.prices)
}
