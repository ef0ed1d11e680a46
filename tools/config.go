package tools

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/glidepath/glidepath/internal/yamlfield"
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
// have lines. A YAML alias (*name) is refused: JSON has none, and a value
// reached through one would stand at two lines. These rules are shared by
// every file Glidepath reads: a scenario of package sim, a harness plan
// file. builtins are the tools a builtin entry may name.
//
// Everything that can be checked without a request is checked here: an
// unknown or repeated field, an unknown effect, a duration that is not one
// or is negative, a p50 above the p95 or the ceiling, max_attempts below 1,
// a name that is not a function name or is used twice, none or several of
// url / command / builtin, a URL that is not http(s), an empty command, an
// unknown builtin, parameters that are not a JSON Schema. A field whose
// value is null is left out. Every error found is returned, joined, each a
// [*ConfigError] naming the field and the line.
func ParseConfig(name string, data []byte, builtins map[string]Tool) (*Config, error) {
	c := &Config{File: name, builtins: builtins}
	if len(data) > MaxConfig {
		return nil, &ConfigError{File: name, Err: fmt.Errorf("larger than %d bytes", MaxConfig)}
	}
	root, err := yamlfield.Parse(data)
	if e, ok := errors.AsType[*yamlfield.Error](err); ok {
		return nil, configError(name, e)
	}
	if root == nil {
		return c, nil // an empty file has no tools, as {} has none
	}
	p := &configParser{builtins: builtins}
	c.Entries = p.document(yamlfield.Root(root))
	if found := p.w.Errs(); len(found) > 0 {
		errs := make([]error, len(found))
		for i, e := range found {
			errs[i] = configError(name, e)
		}
		return nil, errors.Join(errs...)
	}
	return c, nil
}

func configError(file string, e *yamlfield.Error) *ConfigError {
	return &ConfigError{File: file, Line: e.Line, Field: e.Field, Value: e.Value, Err: e.Err}
}

// entryFields are the fields of an entry, in the order SPEC §5 gives them.
var entryFields = []string{"name", "description", "parameters", "effect", "ceiling", "p50", "p95",
	"speculative", "cancellable", "max_attempts", "url", "command", "builtin"}

var (
	errNotConfig   = errors.New(`not a mapping; a tool config is {"tools": […]}`)
	errRequired    = errors.New("required")
	errEffect      = errors.New("must be read or write")
	errMaxAttempts = errors.New("must be 1 or more")
	errNoKind      = errors.New("one of url, command or builtin is required")
	errNoProgram   = errors.New("no program to run")
)

// configParser walks a config file's entries; its walker holds every
// mistake found.
type configParser struct {
	w        yamlfield.Walker
	builtins map[string]Tool
}

func (p *configParser) document(root yamlfield.Field) []Entry {
	if root.Value.Kind != yaml.MappingNode {
		p.w.Fail(root, errNotConfig)
		return nil
	}
	var entries []Entry
	for f := range p.w.Fields(root, "tools") {
		entries = p.tools(f)
	}
	return entries
}

func (p *configParser) tools(list yamlfield.Field) []Entry {
	var entries []Entry
	names := make(map[string]int)
	for item := range p.w.Items(list) {
		if item.Value.Kind != yaml.MappingNode {
			p.w.Fail(item, yamlfield.ErrNotMapping)
			continue
		}
		e, ok := p.entry(item)
		if !ok {
			continue
		}
		if line, dup := names[e.Name]; dup {
			p.w.Report(&yamlfield.Error{Line: e.Line, Field: item.Path + ".name", Value: e.Name,
				Err: fmt.Errorf("%w: first given at line %d", ErrDuplicate, line)})
			continue
		}
		names[e.Name] = e.Line
		entries = append(entries, e)
	}
	return entries
}

// entry parses one tools entry; it reports whether the entry is usable.
func (p *configParser) entry(m yamlfield.Field) (Entry, bool) {
	before := len(p.w.Errs())
	e := Entry{Line: m.Value.Line}
	named := false
	var kinds []yamlfield.Field // the url, command and builtin fields given
	for f := range p.w.Fields(m, entryFields...) {
		switch f.Name {
		case "name":
			named = true
			if s, ok := p.w.String(f); ok {
				e.Name = s
				if !namePattern.MatchString(s) {
					p.w.Fail(f, errBadName)
				}
			}
		case "description":
			e.Description, _ = p.w.String(f)
		case "parameters":
			e.Parameters = p.schema(f)
		case "effect":
			if s, ok := p.w.String(f); ok {
				switch Effect(s) {
				case Read, Write:
					e.Effect = Effect(s)
				default:
					p.w.Fail(f, errEffect)
				}
			}
		case "ceiling":
			e.Ceiling, _ = p.w.Duration(f)
		case "p50":
			e.P50, _ = p.w.Duration(f)
		case "p95":
			e.P95, _ = p.w.Duration(f)
		case "speculative":
			if b, ok := p.w.Bool(f); ok {
				e.Speculative = &b
			}
		case "cancellable":
			if b, ok := p.w.Bool(f); ok {
				e.Cancellable = &b
			}
		case "max_attempts":
			switch n, ok := p.w.Int(f); {
			case ok && n < 1:
				p.w.Fail(f, errMaxAttempts)
			case ok:
				e.MaxAttempts = n
			}
		case "url":
			kinds = append(kinds, f)
			if s, ok := p.w.String(f); ok {
				e.URL = s
				if err := checkURL(s); err != nil {
					p.w.Fail(f, err)
				}
			}
		case "command":
			kinds = append(kinds, f)
			e.Command = p.argv(f)
		case "builtin":
			kinds = append(kinds, f)
			if s, ok := p.w.String(f); ok {
				e.Builtin = s
				// An empty name is unknown too: a builtin entry with no
				// tool behind it could not be built.
				if _, ok := p.builtins[s]; !ok {
					p.w.Fail(f, fmt.Errorf("unknown builtin (known: %s)", builtinNames(p.builtins)))
				}
			}
		}
	}
	if !named {
		p.w.Report(&yamlfield.Error{Line: m.Value.Line, Field: m.Path + ".name", Err: errRequired})
	}
	switch len(kinds) {
	case 0:
		p.w.Fail(m, errNoKind)
	case 1:
	default:
		p.w.Report(&yamlfield.Error{Line: kinds[1].Line, Field: kinds[1].Path,
			Err: fmt.Errorf("only one of url, command or builtin may be given; %s is at line %d", kinds[0].Name, kinds[0].Line)})
	}
	if err := checkDurations(Spec{Ceiling: e.Ceiling, P50: e.P50, P95: e.P95}); err != nil {
		p.w.Report(&yamlfield.Error{Line: m.Value.Line, Field: m.Path + "." + err.field, Err: err.err})
	}
	return e, len(p.w.Errs()) == before
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

// argv reads a command: a list of words, numbers taken as written.
func (p *configParser) argv(f yamlfield.Field) []string {
	if f.Value.Kind != yaml.SequenceNode {
		p.w.Fail(f, yamlfield.ErrNotList)
		return nil
	}
	var argv []string
	for item := range p.w.Items(f) {
		if a, ok := p.w.Scalar(item); ok {
			argv = append(argv, a)
		}
	}
	if len(f.Value.Content) == 0 || len(argv) > 0 && argv[0] == "" {
		p.w.Fail(f, errNoProgram)
	}
	return argv
}

// schema converts parameters to JSON and checks that they compile.
func (p *configParser) schema(f yamlfield.Field) json.RawMessage {
	if f.Value.Kind != yaml.MappingNode {
		p.w.Fail(f, errors.New("not a JSON Schema object"))
		return nil
	}
	var doc any
	if err := f.Value.Decode(&doc); err != nil {
		p.w.Fail(f, err)
		return nil
	}
	raw, err := json.Marshal(doc)
	if err != nil {
		p.w.Fail(f, fmt.Errorf("not expressible as JSON: %v", err))
		return nil
	}
	if _, err := compileSchema(raw); err != nil {
		p.w.Fail(f, fmt.Errorf("not a usable JSON Schema: %v", err))
		return nil
	}
	return raw
}
