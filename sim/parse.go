package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// ParseScenario parses a scenario in YAML, or in JSON (which is YAML too):
// a mapping with "seed" and "rules", each rule a mapping of the [Rule]
// fields in snake case — request, turn, times, delay, keepalive (a
// duration or "forever"), keepalive_every, hang, first_token, chunk_gap,
// hang_after_chunks, close_after_chunks, status, message, retry_after,
// retry_after_ms, tool_calls (a list of name, arguments and id; arguments
// as YAML are encoded as JSON, as a string are sent verbatim), answer and
// usage. Durations are Go durations ("250ms", "2s"). Unknown fields, bad
// values and fields that conflict are a [*ScenarioError] naming the field
// and its line; aliases are refused. Empty input is the default policy. It
// never panics.
func ParseScenario(data []byte) (*Scenario, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return &Scenario{}, nil
		}
		return nil, yamlError(err)
	}
	var more yaml.Node
	if err := dec.Decode(&more); !errors.Is(err, io.EOF) {
		if err != nil {
			return nil, yamlError(err)
		}
		return nil, &ScenarioError{Line: more.Line, Err: errors.New("more than one YAML document")}
	}
	if err := noAliases(&doc, ""); err != nil {
		return nil, err
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if isNull(root) {
		return &Scenario{}, nil
	}
	sc := &Scenario{}
	err := fields(root, "", map[string]func(*yaml.Node) error{
		"seed": func(n *yaml.Node) error {
			v, err := intValue(n, "seed")
			sc.Seed = v
			return err
		},
		"rules": func(n *yaml.Node) error {
			if isNull(n) {
				return nil
			}
			if n.Kind != yaml.SequenceNode {
				return nodeError(n, "rules", "must be a list of rules")
			}
			for i, rn := range n.Content {
				r, err := parseRule(rn, fmt.Sprintf("rules[%d].", i))
				if err != nil {
					return err
				}
				sc.Rules = append(sc.Rules, r)
			}
			return nil
		},
	})
	if err != nil {
		return nil, err
	}
	return sc, nil
}

func parseRule(n *yaml.Node, prefix string) (Rule, error) {
	var r Rule
	line := map[string]int{}
	dur := func(name string, dst *time.Duration) func(*yaml.Node) error {
		return func(n *yaml.Node) error {
			line[name] = n.Line
			d, err := durationValue(n, prefix+name, name == "keepalive")
			*dst = d
			return err
		}
	}
	num := func(name string, dst *int) func(*yaml.Node) error {
		return func(n *yaml.Node) error {
			line[name] = n.Line
			v, err := intValue(n, prefix+name)
			if err == nil && (v < math32Min || v > math32Max) {
				err = nodeError(n, prefix+name, "%d is out of range", v)
			}
			*dst = int(v)
			return err
		}
	}
	count := func(name string, dst **int) func(*yaml.Node) error {
		return func(n *yaml.Node) error {
			var v int
			err := num(name, &v)(n)
			*dst = &v
			return err
		}
	}
	text := func(name string, dst *string) func(*yaml.Node) error {
		return func(n *yaml.Node) error {
			line[name] = n.Line
			if n.Kind != yaml.ScalarNode || isNull(n) {
				return nodeError(n, prefix+name, "must be a single value")
			}
			*dst = n.Value
			return nil
		}
	}
	flag := func(name string, dst *bool) func(*yaml.Node) error {
		return func(n *yaml.Node) error {
			line[name] = n.Line
			if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" {
				return nodeError(n, prefix+name, "must be true or false, got %q", n.Value)
			}
			return n.Decode(dst)
		}
	}
	err := fields(n, prefix, map[string]func(*yaml.Node) error{
		"request":            num("request", &r.Request),
		"turn":               num("turn", &r.Turn),
		"times":              num("times", &r.Times),
		"delay":              dur("delay", &r.Delay),
		"keepalive":          dur("keepalive", &r.Keepalive),
		"keepalive_every":    dur("keepalive_every", &r.KeepaliveEvery),
		"hang":               flag("hang", &r.Hang),
		"first_token":        dur("first_token", &r.FirstToken),
		"chunk_gap":          dur("chunk_gap", &r.ChunkGap),
		"hang_after_chunks":  count("hang_after_chunks", &r.HangAfterChunks),
		"close_after_chunks": count("close_after_chunks", &r.CloseAfterChunks),
		"status":             num("status", &r.Status),
		"message":            text("message", &r.Message),
		"retry_after":        text("retry_after", &r.RetryAfter),
		"retry_after_ms":     text("retry_after_ms", &r.RetryAfterMs),
		"answer":             text("answer", &r.Answer),
		"usage": func(n *yaml.Node) error {
			var v bool
			err := flag("usage", &v)(n)
			r.Usage = &v
			return err
		},
		"tool_calls": func(n *yaml.Node) error {
			line["tool_calls"] = n.Line
			calls, err := parseToolCalls(n, prefix+"tool_calls")
			r.ToolCalls = calls
			return err
		},
	})
	if err != nil {
		return Rule{}, err
	}
	if err := r.check(prefix, line); err != nil {
		return Rule{}, err
	}
	return r, nil
}

const (
	math32Min = -1 << 31
	math32Max = 1<<31 - 1
)

func parseToolCalls(n *yaml.Node, path string) ([]ToolCall, error) {
	if n.Kind != yaml.SequenceNode || len(n.Content) == 0 {
		return nil, nodeError(n, path, "must be a non-empty list of {name, arguments, id}")
	}
	calls := make([]ToolCall, 0, len(n.Content))
	for i, cn := range n.Content {
		p := fmt.Sprintf("%s[%d]", path, i)
		var c ToolCall
		err := fields(cn, p+".", map[string]func(*yaml.Node) error{
			"name": func(n *yaml.Node) error {
				if n.Kind != yaml.ScalarNode || n.Tag != "!!str" || n.Value == "" {
					return nodeError(n, p+".name", "must be a non-empty string")
				}
				c.Name = n.Value
				return nil
			},
			"id": func(n *yaml.Node) error {
				if n.Kind != yaml.ScalarNode || n.Tag != "!!str" {
					return nodeError(n, p+".id", "must be a string")
				}
				c.ID = n.Value
				return nil
			},
			"arguments": func(n *yaml.Node) error {
				args, err := argumentsValue(n, p+".arguments")
				c.Arguments = args
				return err
			},
		})
		if err != nil {
			return nil, err
		}
		if c.Name == "" {
			return nil, nodeError(cn, p+".name", "missing")
		}
		calls = append(calls, c)
	}
	return calls, nil
}

// argumentsValue turns a YAML value into the JSON text of arguments. A
// string is taken verbatim, so a scenario can send arguments that are not
// valid JSON; anything else is encoded.
func argumentsValue(n *yaml.Node, path string) (string, error) {
	if isNull(n) {
		return "{}", nil
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!str" {
		return n.Value, nil
	}
	var v any
	if err := n.Decode(&v); err != nil {
		return "", nodeError(n, path, "%v", err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "", nodeError(n, path, "cannot be written as JSON: %v", err)
	}
	return string(b), nil
}

// fields walks a mapping, calling set for each key; unknown and repeated
// keys are errors.
func fields(n *yaml.Node, prefix string, set map[string]func(*yaml.Node) error) error {
	if n.Kind != yaml.MappingNode {
		return &ScenarioError{Line: n.Line, Field: strings.TrimSuffix(prefix, "."), Err: errors.New("must be a mapping of fields")}
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		name := k.Value
		f, ok := set[name]
		if !ok {
			return &ScenarioError{Line: k.Line, Field: prefix + name, Err: errors.New("unknown field")}
		}
		if seen[name] {
			return &ScenarioError{Line: k.Line, Field: prefix + name, Err: errors.New("repeated field")}
		}
		seen[name] = true
		if err := f(v); err != nil {
			return err
		}
	}
	return nil
}

func intValue(n *yaml.Node, path string) (int64, error) {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!int" {
		return 0, nodeError(n, path, "must be an integer, got %q", n.Value)
	}
	var v int64
	if err := n.Decode(&v); err != nil {
		return 0, nodeError(n, path, "must be an integer, got %q", n.Value)
	}
	return v, nil
}

func durationValue(n *yaml.Node, path string, forever bool) (time.Duration, error) {
	if n.Kind != yaml.ScalarNode || isNull(n) {
		return 0, nodeError(n, path, "bad duration: want e.g. \"250ms\" or \"2s\"")
	}
	if forever && n.Value == "forever" {
		return Forever, nil
	}
	d, err := time.ParseDuration(n.Value)
	if err != nil {
		return 0, nodeError(n, path, "bad duration %q: want e.g. \"250ms\" or \"2s\"", n.Value)
	}
	if d < 0 {
		return 0, nodeError(n, path, "bad duration %q: must not be negative", n.Value)
	}
	return d, nil
}

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.Tag == "!!null" }

func nodeError(n *yaml.Node, path, format string, args ...any) error {
	return &ScenarioError{Line: n.Line, Field: path, Err: fmt.Errorf(format, args...)}
}

// noAliases rejects anchors' aliases: a scenario is small enough to write
// out, and refusing them rules out alias bombs in free-form arguments.
func noAliases(n *yaml.Node, path string) error {
	if n.Kind == yaml.AliasNode {
		return &ScenarioError{Line: n.Line, Field: path, Err: errors.New("YAML aliases are not supported")}
	}
	for _, c := range n.Content {
		if err := noAliases(c, path); err != nil {
			return err
		}
	}
	return nil
}

// yamlError turns a syntax error ("yaml: line 3: …") into a ScenarioError
// carrying the line.
func yamlError(err error) error {
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, "yaml: line "); ok {
		if num, text, ok := strings.Cut(rest, ": "); ok {
			if line, perr := strconv.Atoi(num); perr == nil {
				return &ScenarioError{Line: line, Err: errors.New(text)}
			}
		}
	}
	return &ScenarioError{Err: err}
}
