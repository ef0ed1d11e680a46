package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// MaxConfig bounds the size of a tool config file.
const MaxConfig = 4 << 20 // 4 MiB

// A Config is a tool config file (SPEC §5), parsed and checked:
//
//	{"tools": [ENTRY, …]}
//
// in JSON, or the same shape in YAML. Build its tools with [Config.Tools],
// after [Config.Resolve] has filled what url entries left out.
type Config struct {
	File    string // the name the file was parsed under, for messages
	Entries []Entry

	builtins map[string]Tool
}

// An Entry is one tool of a config file. A field left out is its zero
// value (nil for the booleans), which a remote tool's manifest may fill in;
// where both speak, the entry wins. A zero duration counts as left out.
type Entry struct {
	Name        string
	Description string
	Parameters  json.RawMessage // JSON Schema; a YAML mapping is converted
	Effect      Effect
	Ceiling     time.Duration
	P50, P95    time.Duration
	Speculative *bool
	Cancellable *bool
	MaxAttempts int

	// Exactly one of URL, Command and Builtin is set.
	URL     string   // the base URL U of a remote tool server
	Command []string // argv of a subprocess tool
	Builtin string   // the name of a tool the caller supplied

	Line int // where the entry starts in the file
}

// ConfigError reports a bad config file: where, which field, and why. It
// matches [ErrConfig] and unwraps to Err.
type ConfigError struct {
	File  string
	Line  int    // 0 when the error has no line
	Field string // e.g. "tools[2].effect"; empty for a syntax error
	Value string // the value as written, when there is one
	Err   error
}

func (e *ConfigError) Error() string {
	var b strings.Builder
	b.WriteString("tools: ")
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	if e.Field != "" {
		b.WriteString(": ")
		b.WriteString(e.Field)
	}
	if e.Value != "" {
		fmt.Fprintf(&b, " %q", clip(e.Value, 64))
	}
	fmt.Fprintf(&b, ": %v", e.Err)
	return b.String()
}

func (e *ConfigError) Unwrap() error { return e.Err }

// Is reports whether target is [ErrConfig].
func (e *ConfigError) Is(target error) bool { return target == ErrConfig }

// LoadConfig reads and parses the config file at path; see [ParseConfig].
func LoadConfig(path string, builtins map[string]Tool) (*Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, &ConfigError{File: path, Err: err}
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxConfig+1))
	if err != nil {
		return nil, &ConfigError{File: path, Err: err}
	}
	return ParseConfig(path, data, builtins)
}

// ParseConfig parses a tool config file named name in messages. JSON is
// read as YAML, of which it is a subset, so both are strict alike and both
// have lines. builtins are the tools a builtin entry may name.
//
// Everything that can be checked without a request is checked here: an
// unknown field, an unknown effect, a duration that is not one or is
// negative, a p50 above the p95 or the ceiling, max_attempts below 1, a name
// that is not a function name or is used twice, none or several of url /
// command / builtin, a URL that is not http(s), an empty command, an
// unknown builtin, parameters that are not a JSON Schema. Every error found
// is returned, joined, each a [*ConfigError] naming the field and the line.
func ParseConfig(name string, data []byte, builtins map[string]Tool) (*Config, error) {
	c := &Config{File: name, builtins: builtins}
	if len(data) > MaxConfig {
		return nil, &ConfigError{File: name, Err: fmt.Errorf("larger than %d bytes", MaxConfig)}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	switch err := dec.Decode(&doc); {
	case errors.Is(err, io.EOF):
		return c, nil // an empty file has no tools, as {} has none
	case err != nil:
		return nil, syntaxError(name, err)
	}
	var more yaml.Node
	switch err := dec.Decode(&more); {
	case errors.Is(err, io.EOF):
	case err != nil:
		return nil, syntaxError(name, err)
	default:
		return nil, &ConfigError{File: name, Line: more.Line, Err: errors.New("a second document; a tool config holds one")}
	}
	p := &configParser{file: name, builtins: builtins}
	c.Entries = p.document(&doc)
	if len(p.errs) > 0 {
		return nil, errors.Join(p.errs...)
	}
	return c, nil
}

var yamlLine = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)

// syntaxError restates a YAML decoder error as FILE:LINE: what.
func syntaxError(file string, err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	e := &ConfigError{File: file, Err: errors.New(msg)}
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		e.Line, _ = strconv.Atoi(m[1])
		e.Err = errors.New(m[2])
	}
	return e
}

var entryFields = []string{"name", "description", "parameters", "effect", "ceiling", "p50", "p95",
	"speculative", "cancellable", "max_attempts", "url", "command", "builtin"}

type configParser struct {
	file     string
	builtins map[string]Tool
	errs     []error
}

func (p *configParser) fail(n *yaml.Node, field, value string, err error) {
	p.errs = append(p.errs, &ConfigError{File: p.file, Line: n.Line, Field: field, Value: value, Err: err})
}

// deref follows an alias one step. Aliases are followed only here, at
// fixed depth, so that a file cannot make the walk exponential.
func deref(n *yaml.Node) *yaml.Node {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		return n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.Tag == "!!null" }

// pairs returns a mapping's keys and values, reporting repeated keys and
// keys that are not strings.
func (p *configParser) pairs(m *yaml.Node, field string) (keys []string, vals, keyNodes []*yaml.Node) {
	seen := make(map[string]int)
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := deref(m.Content[i]), m.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			p.fail(k, field, "", errors.New("a key that is not a string"))
			continue
		}
		if line, dup := seen[k.Value]; dup {
			p.fail(k, join(field, k.Value), "", fmt.Errorf("repeated; first given at line %d", line))
			continue
		}
		seen[k.Value] = k.Line
		keys, vals, keyNodes = append(keys, k.Value), append(vals, deref(v)), append(keyNodes, k)
	}
	return keys, vals, keyNodes
}

func join(field, key string) string {
	if field == "" {
		return key
	}
	return field + "." + key
}

func (p *configParser) document(doc *yaml.Node) []Entry {
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil
	}
	root := deref(doc.Content[0])
	if isNull(root) {
		return nil
	}
	if root.Kind != yaml.MappingNode {
		p.fail(root, "", "", errors.New(`not a mapping; a tool config is {"tools": […]}`))
		return nil
	}
	keys, vals, keyNodes := p.pairs(root, "")
	var entries []Entry
	for i, k := range keys {
		if k != "tools" {
			p.fail(keyNodes[i], k, "", errors.New(`unknown field at the top level (known: tools)`))
			continue
		}
		entries = p.tools(vals[i])
	}
	return entries
}

func (p *configParser) tools(seq *yaml.Node) []Entry {
	if isNull(seq) {
		return nil
	}
	if seq.Kind != yaml.SequenceNode {
		p.fail(seq, "tools", "", errors.New("not a list"))
		return nil
	}
	var entries []Entry
	names := make(map[string]int)
	for i, n := range seq.Content {
		field := fmt.Sprintf("tools[%d]", i)
		n = deref(n)
		if n.Kind != yaml.MappingNode {
			p.fail(n, field, "", errors.New("not a mapping"))
			continue
		}
		e, ok := p.entry(n, field)
		if !ok {
			continue
		}
		if line, dup := names[e.Name]; dup {
			p.errs = append(p.errs, &ConfigError{File: p.file, Line: e.Line, Field: field + ".name", Value: e.Name,
				Err: fmt.Errorf("%w: first given at line %d", ErrDuplicate, line)})
			continue
		}
		names[e.Name] = e.Line
		entries = append(entries, e)
	}
	return entries
}

// entry parses one tools entry; it reports whether the entry is usable.
func (p *configParser) entry(m *yaml.Node, field string) (Entry, bool) {
	before := len(p.errs)
	e := Entry{Line: m.Line}
	keys, vals, keyNodes := p.pairs(m, field)
	var nameLine int
	var kinds []string
	kindLine := make(map[string]int)
	for i, k := range keys {
		v, f := vals[i], field+"."+k
		if isNull(v) {
			continue // left out, as if not written
		}
		switch k {
		case "name":
			e.Name, nameLine = p.str(v, f), v.Line
			if e.Name != "" && !namePattern.MatchString(e.Name) {
				p.fail(v, f, e.Name, errBadName)
			}
		case "description":
			e.Description = p.str(v, f)
		case "parameters":
			e.Parameters = p.schema(v, f)
		case "effect":
			switch s := p.str(v, f); Effect(s) {
			case Read, Write:
				e.Effect = Effect(s)
			default:
				p.fail(v, f, s, errors.New("must be read or write"))
			}
		case "ceiling":
			e.Ceiling = p.duration(v, f)
		case "p50":
			e.P50 = p.duration(v, f)
		case "p95":
			e.P95 = p.duration(v, f)
		case "speculative":
			b := p.boolean(v, f)
			e.Speculative = &b
		case "cancellable":
			b := p.boolean(v, f)
			e.Cancellable = &b
		case "max_attempts":
			if v.Kind != yaml.ScalarNode || v.Tag != "!!int" {
				p.fail(v, f, v.Value, errors.New("not an integer"))
				break
			}
			if err := v.Decode(&e.MaxAttempts); err != nil || e.MaxAttempts < 1 {
				p.fail(v, f, v.Value, errors.New("must be 1 or more"))
			}
		case "url":
			e.URL = p.str(v, f)
			if err := checkURL(e.URL); e.URL != "" && err != nil {
				p.fail(v, f, e.URL, err)
			}
		case "command":
			e.Command = p.argv(v, f)
		case "builtin":
			e.Builtin = p.str(v, f)
			if _, ok := p.builtins[e.Builtin]; e.Builtin != "" && !ok {
				p.fail(v, f, e.Builtin, fmt.Errorf("unknown builtin (known: %s)", builtinNames(p.builtins)))
			}
		default:
			p.fail(keyNodes[i], f, "", fmt.Errorf("unknown field (known: %s)", strings.Join(entryFields, ", ")))
			continue
		}
		if k == "url" || k == "command" || k == "builtin" {
			kinds = append(kinds, k)
			kindLine[k] = keyNodes[i].Line
		}
	}
	if nameLine == 0 {
		p.fail(m, field+".name", "", errors.New("required"))
	}
	switch len(kinds) {
	case 0:
		p.fail(m, field, "", errors.New("one of url, command or builtin is required"))
	case 1:
	default:
		p.errs = append(p.errs, &ConfigError{File: p.file, Line: kindLine[kinds[1]], Field: field + "." + kinds[1],
			Err: fmt.Errorf("only one of url, command or builtin may be given; %s is at line %d", kinds[0], kindLine[kinds[0]])})
	}
	if err := checkDurations(Spec{Ceiling: e.Ceiling, P50: e.P50, P95: e.P95}); err != nil {
		p.errs = append(p.errs, &ConfigError{File: p.file, Line: m.Line, Field: field + "." + err.field, Err: err.err})
	}
	return e, len(p.errs) == before
}

func builtinNames(m map[string]Tool) string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	if len(names) == 0 {
		return "none"
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

func (p *configParser) str(v *yaml.Node, field string) string {
	if v.Kind != yaml.ScalarNode || v.Tag != "!!str" {
		p.fail(v, field, v.Value, errors.New("not a string"))
		return ""
	}
	return v.Value
}

func (p *configParser) boolean(v *yaml.Node, field string) bool {
	var b bool
	if v.Kind != yaml.ScalarNode || v.Tag != "!!bool" || v.Decode(&b) != nil {
		p.fail(v, field, v.Value, errors.New("not true or false"))
	}
	return b
}

func (p *configParser) duration(v *yaml.Node, field string) time.Duration {
	if v.Kind != yaml.ScalarNode || v.Tag != "!!str" {
		p.fail(v, field, v.Value, errors.New(`not a duration such as "1s" or "250ms"`))
		return 0
	}
	d, err := time.ParseDuration(v.Value)
	switch {
	case err != nil:
		p.fail(v, field, v.Value, errors.New(`not a duration such as "1s" or "250ms"`))
	case d < 0:
		p.fail(v, field, v.Value, errors.New("negative"))
	}
	return max(d, 0)
}

func (p *configParser) argv(v *yaml.Node, field string) []string {
	if v.Kind != yaml.SequenceNode {
		p.fail(v, field, "", errors.New("not a list of strings (an argv)"))
		return nil
	}
	var argv []string
	for i, a := range v.Content {
		a = deref(a)
		if a.Kind != yaml.ScalarNode || a.Tag != "!!str" && a.Tag != "!!int" && a.Tag != "!!float" {
			p.fail(a, fmt.Sprintf("%s[%d]", field, i), a.Value, errors.New("not a string"))
			continue
		}
		argv = append(argv, a.Value)
	}
	if len(v.Content) == 0 || len(argv) > 0 && argv[0] == "" {
		p.fail(v, field, "", errors.New("no program to run"))
	}
	return argv
}

// schema converts parameters to JSON and checks that they compile.
func (p *configParser) schema(v *yaml.Node, field string) json.RawMessage {
	if v.Kind != yaml.MappingNode {
		p.fail(v, field, "", errors.New("not a JSON Schema object"))
		return nil
	}
	var doc any
	if err := v.Decode(&doc); err != nil {
		p.fail(v, field, "", err)
		return nil
	}
	raw, err := json.Marshal(doc)
	if err != nil {
		p.fail(v, field, "", fmt.Errorf("not expressible as JSON: %v", err))
		return nil
	}
	if _, err := compileSchema(raw); err != nil {
		p.fail(v, field, "", fmt.Errorf("not a usable JSON Schema: %v", err))
		return nil
	}
	return raw
}
