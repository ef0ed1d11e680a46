package sim

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/glidepath/glidepath/internal/yamlfield"
	"go.yaml.in/yaml/v3"
)

// ParseScenario parses a scenario in YAML, or in JSON (which is YAML too):
// a mapping with "seed" and "rules", each rule a mapping of the [Rule]
// fields in snake case — request, turn, times, after, for (a positive
// duration), delay, keepalive (a duration or "forever"), keepalive_every,
// hang, first_token, chunk_gap, hang_after_chunks, close_after_chunks,
// status, message, retry_after, retry_after_ms, tool_calls (a list of
// name, arguments and id; arguments as YAML are encoded as JSON, as a
// string are sent verbatim), answer, usage, cached_tokens,
// reasoning_tokens, stream_error and failed.
// Durations are Go durations ("250ms", "2s"); a field whose value is null
// is left out. Unknown or
// repeated fields, bad values and fields that conflict are a
// [*ScenarioError] naming the field and its line, the first in the file;
// YAML aliases are refused, as in a tool config file (package tools),
// whose rules these are. Empty input is the default policy. It never
// panics.
func ParseScenario(data []byte) (*Scenario, error) {
	root, err := yamlfield.Parse(data)
	if e, ok := errors.AsType[*yamlfield.Error](err); ok {
		return nil, scenarioError(e)
	}
	sc := &Scenario{}
	if root == nil {
		return sc, nil
	}
	var p parser
	for f := range p.w.Fields(yamlfield.Root(root), "seed", "rules") {
		switch f.Name {
		case "seed":
			sc.Seed, _ = p.w.Int64(f)
		case "rules":
			for item := range p.w.Items(f) {
				if r, ok := p.rule(item); ok {
					sc.Rules = append(sc.Rules, r)
				}
			}
		}
	}
	if errs := p.w.Errs(); len(errs) > 0 {
		return nil, scenarioError(errs[0])
	}
	return sc, nil
}

// scenarioError restates a mistake the walk found; a value as written
// goes after the reason, as in the rest of the package's messages.
func scenarioError(e *yamlfield.Error) *ScenarioError {
	err := e.Err
	if e.Value != "" {
		err = fmt.Errorf("%w, got %q", err, e.Value)
	}
	return &ScenarioError{Line: e.Line, Field: e.Field, Err: err}
}

// ruleFields are the fields of a rule, in the order of [Rule].
var ruleFields = []string{"request", "turn", "times", "after", "for", "delay", "keepalive", "keepalive_every",
	"hang", "first_token", "chunk_gap", "hang_after_chunks", "close_after_chunks", "status", "message",
	"retry_after", "retry_after_ms", "tool_calls", "answer", "usage", "cached_tokens", "reasoning_tokens", "stream_error", "failed"}

// parser walks a scenario; its walker holds every mistake found, of which
// ParseScenario reports the first.
type parser struct {
	w yamlfield.Walker
}

// rule parses one rule and, when its fields are good, checks how they go
// together; it reports whether the rule is usable.
func (p *parser) rule(m yamlfield.Field) (Rule, bool) {
	before := len(p.w.Errs())
	var r Rule
	line := map[string]int{}
	for f := range p.w.Fields(m, ruleFields...) {
		line[f.Name] = f.Value.Line
		switch f.Name {
		case "request":
			r.Request = p.int32(f)
		case "turn":
			r.Turn = p.int32(f)
		case "times":
			r.Times = p.int32(f)
		case "after":
			r.After, _ = p.w.Duration(f)
		case "for":
			// In Go a zero For means no end; written out, 0s can only be
			// a mistake, as an empty list of tool calls is.
			if d, ok := p.w.Duration(f); ok && d == 0 {
				p.w.Fail(f, errors.New("must be positive: a window of 0s holds no request"))
			} else {
				r.For = d
			}
		case "delay":
			r.Delay, _ = p.w.Duration(f)
		case "keepalive":
			if f.Value.Kind == yaml.ScalarNode && f.Value.Value == "forever" {
				r.Keepalive = Forever
			} else {
				r.Keepalive, _ = p.w.Duration(f)
			}
		case "keepalive_every":
			r.KeepaliveEvery, _ = p.w.Duration(f)
		case "hang":
			r.Hang, _ = p.w.Bool(f)
		case "first_token":
			r.FirstToken, _ = p.w.Duration(f)
		case "chunk_gap":
			r.ChunkGap, _ = p.w.Duration(f)
		case "hang_after_chunks":
			r.HangAfterChunks = new(p.int32(f))
		case "close_after_chunks":
			r.CloseAfterChunks = new(p.int32(f))
		case "status":
			r.Status = p.int32(f)
		case "message":
			r.Message, _ = p.w.Scalar(f)
		case "retry_after":
			r.RetryAfter, _ = p.w.Scalar(f)
		case "retry_after_ms":
			r.RetryAfterMs, _ = p.w.Scalar(f)
		case "tool_calls":
			r.ToolCalls = p.toolCalls(f)
		case "answer":
			r.Answer, _ = p.w.Scalar(f)
		case "usage":
			b, _ := p.w.Bool(f)
			r.Usage = &b
		case "cached_tokens":
			r.CachedTokens = p.int32(f)
		case "reasoning_tokens":
			r.ReasoningTokens = p.int32(f)
		case "stream_error":
			r.StreamError, _ = p.w.String(f)
		case "failed":
			r.Failed, _ = p.w.String(f)
		}
	}
	if len(p.w.Errs()) > before {
		return Rule{}, false
	}
	if err := r.check(m.Path+".", line); err != nil {
		se, _ := errors.AsType[*ScenarioError](err)
		p.w.Report(&yamlfield.Error{Line: se.Line, Field: se.Field, Err: se.Err})
		return Rule{}, false
	}
	return r, true
}

// int32 reads an integer that fits in 32 bits, so that a scenario means
// the same on every platform.
func (p *parser) int32(f yamlfield.Field) int {
	v, ok := p.w.Int64(f)
	if ok && (v < math.MinInt32 || v > math.MaxInt32) {
		p.w.Fail(f, yamlfield.ErrOutOfRange)
		return 0
	}
	return int(v)
}

func (p *parser) toolCalls(list yamlfield.Field) []ToolCall {
	if list.Value.Kind == yaml.SequenceNode && len(list.Value.Content) == 0 {
		p.w.Fail(list, errors.New("an empty list; give at least one {name, arguments, id}"))
		return nil
	}
	var calls []ToolCall
	for item := range p.w.Items(list) {
		var c ToolCall
		named := false
		for f := range p.w.Fields(item, "name", "id", "arguments") {
			switch f.Name {
			case "name":
				named = true
				if s, ok := p.w.String(f); ok && s == "" {
					p.w.Fail(f, errors.New("must not be empty"))
				} else {
					c.Name = s
				}
			case "id":
				c.ID, _ = p.w.String(f)
			case "arguments":
				c.Arguments = p.arguments(f)
			}
		}
		if !named && item.Value.Kind == yaml.MappingNode {
			p.w.Report(&yamlfield.Error{Line: item.Value.Line, Field: item.Path + ".name", Err: errors.New("missing")})
		}
		calls = append(calls, c)
	}
	return calls
}

// arguments turns a YAML value into the JSON text of arguments. A string
// is taken verbatim, so a scenario can send arguments that are not valid
// JSON; anything else is encoded.
func (p *parser) arguments(f yamlfield.Field) string {
	if f.Value.Kind == yaml.ScalarNode && f.Value.Tag == "!!str" {
		return f.Value.Value
	}
	var v any
	if err := f.Value.Decode(&v); err != nil {
		p.w.Fail(f, err)
		return ""
	}
	b, err := json.Marshal(v)
	if err != nil {
		p.w.Fail(f, fmt.Errorf("cannot be written as JSON: %v", err))
		return ""
	}
	return string(b)
}
