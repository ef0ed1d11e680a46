package tools

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/glidepath/glidepath/cancel"
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

	// MCPServers are the file's mcpServers, in the order written; package
	// tools/mcp connects to them and offers their tools.
	MCPServers []MCPServer

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
	Silence     time.Duration
	Speculative *bool
	Cancellable *bool
	MaxAttempts int

	// Exactly one of URL, Command, Builtin and Agent is set.
	URL     string            // the base URL U of a remote tool server
	Command []string          // argv of a subprocess tool
	Status  []string          // with Command only: argv of its status command ([CommandWithStatus]); nil: none
	Env     map[string]string // with Command only: added to what the process inherits ([Environ]); nil: none
	Builtin string            // the name of a tool the caller supplied
	Agent   *AgentEntry       // a sub-agent (SPEC §5b), which package harness runs

	// RemoteAgent reports that the url entry's manifest says the tool is a
	// sub-agent, as harness serve's are: it is leased as a slice of the
	// run's budget, gated as a sub-agent, and its step kind is
	// "agent:NAME" ([AgentKindPrefix]).
	RemoteAgent bool

	Line int // where the entry starts in the file
}

// An AgentEntry is the agent block of a sub-agent entry (SPEC §5b): the
// child harness a call of the entry runs. A field left out is its zero
// value, which selects the parent's (Model, API) or the default (MaxSteps).
type AgentEntry struct {
	Instructions string // the child's system prompt, before the harness's own
	ToolsFile    string // the child's tools file as written, relative to the file of the entry
	Model        string // the child's model name; empty: the parent's model and base URL
	API          string // the API the child's model is spoken to in, chat or responses; empty: the parent's
	MaxSteps     int    // the child's model turns; zero: the harness's default

	// Tools is the child's tools config, which [LoadConfig] loads from
	// ToolsFile; nil when the entry names none (the child has no tools)
	// or when the config was parsed from bytes by [ParseConfig].
	Tools *Config

	toolsLine int // where ToolsFile is given, for the errors of loading it
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

// LoadConfig reads and parses the config file at path (see
// [ParseConfig]), and the tools file of every agent entry, relative to the
// file that names it, with the same builtins: a sub-agent's tools are
// checked before any run starts. A tools file that names itself, directly
// or through other agents' files, is bad config: a sub-agent that could
// call itself without end would only end when the slices ran out.
func LoadConfig(path string, builtins map[string]Tool) (*Config, error) {
	return loadConfig(path, builtins, nil)
}

func loadConfig(path string, builtins map[string]Tool, parents []string) (*Config, error) {
	c, err := readConfig(path, builtins)
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, &ConfigError{File: path, Err: err}
	}
	parents = append(slices.Clip(parents), abs)
	var errs []error
	for i := range c.Entries {
		a := c.Entries[i].Agent
		if a == nil || a.ToolsFile == "" {
			continue
		}
		child := a.ToolsFile
		if !filepath.IsAbs(child) {
			child = filepath.Join(filepath.Dir(path), child)
		}
		bad := func(err error) {
			errs = append(errs, &ConfigError{File: path, Line: a.toolsLine,
				Field: fmt.Sprintf("tools[%d].agent.tools", i), Value: a.ToolsFile, Err: err})
		}
		childAbs, err := filepath.Abs(child)
		if err != nil {
			bad(err)
			continue
		}
		if at := slices.Index(parents, childAbs); at >= 0 {
			chain := make([]string, 0, len(parents)-at+1)
			for _, p := range parents[at:] {
				chain = append(chain, filepath.Base(p))
			}
			bad(fmt.Errorf("names a tools file that names this agent again (%s → %s): a sub-agent may not call itself",
				strings.Join(chain, " → "), filepath.Base(childAbs)))
			continue
		}
		if _, err := os.Stat(child); err != nil {
			bad(err) // a file that cannot be opened is the naming entry's mistake
			continue
		}
		a.Tools, err = loadConfig(child, builtins, parents)
		if err != nil {
			if _, ok := errors.AsType[*ConfigError](err); !ok {
				bad(err)
				continue
			}
			errs = append(errs, err) // the child file's own errors, with its name and lines
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return c, nil
}

func readConfig(path string, builtins map[string]Tool) (*Config, error) {
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
// env on an entry that is not a command or with a name no process can
// have, an unknown builtin, parameters that are not a JSON Schema, an
// agent's api that is not chat or responses. A field whose value is null
// is left out. Every error found is returned, joined, each a
// [*ConfigError] naming the field and the line.
//
// An agent entry's tools file is not read here: its Agent.Tools stays nil,
// and [LoadConfig] is what loads it.
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
	c.MCPServers = p.servers
	for i := range c.MCPServers {
		c.MCPServers[i].File = name
	}
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
	"silence", "speculative", "cancellable", "max_attempts", "url", "command", "status", "env", "builtin", "agent"}

// agentFields are the fields of an entry's agent block (SPEC §5b).
var agentFields = []string{"instructions", "tools", "model", "api", "max_steps"}

// apis are the values of an agent's api: model.APIChat and
// model.APIResponses, written out because package tools does not depend
// on the model client.
var apis = []string{"chat", "responses"}

var (
	errNotConfig   = errors.New(`not a mapping; a tool config is {"tools": […], "mcpServers": {…}}`)
	errRequired    = errors.New("required")
	errEffect      = errors.New("must be read or write")
	errMaxAttempts = errors.New("must be 1 or more")
	errNoKind      = errors.New("one of url, command, builtin or agent is required")
	errMaxSteps    = errors.New("must be 1 or more")
	errAPI         = errors.New("must be chat or responses; leave api out for the parent's")
	errNotForAgent = errors.New("does not apply to a sub-agent, whose parameters are always {task} and which is cancelled with its parent")
	errNoProgram   = errors.New("no program to run")

	errStatusNotCommand = errors.New("only a command entry has a status command; a url tool's status is its server's")
	errEnvNotCommand    = errors.New("only a command entry has an environment; a url tool's is its server's")
	errCommandCancel    = errors.New("a command tool cannot be cancelled by key: its process group is killed when its lease ends")
)

// configParser walks a config file's entries; its walker holds every
// mistake found.
type configParser struct {
	w        yamlfield.Walker
	builtins map[string]Tool
	servers  []MCPServer
}

func (p *configParser) document(root yamlfield.Field) []Entry {
	if root.Value.Kind != yaml.MappingNode {
		p.w.Fail(root, errNotConfig)
		return nil
	}
	var entries []Entry
	for f := range p.w.Fields(root, "tools", "mcpServers") {
		switch f.Name {
		case "tools":
			entries = p.tools(f)
		case "mcpServers":
			p.servers = p.mcpServers(f)
		}
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
	var kinds []yamlfield.Field // the url, command, builtin and agent fields given
	var params, cancellable, status, env yamlfield.Field
	notForAgent := []*yamlfield.Field{&params, &cancellable}
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
			params = f
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
		case "silence":
			e.Silence, _ = p.w.Duration(f)
		case "speculative":
			if b, ok := p.w.Bool(f); ok {
				e.Speculative = &b
			}
		case "cancellable":
			cancellable = f
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
		case "status":
			status = f
			e.Status = p.argv(f)
		case "env":
			env = f
			e.Env = p.env(f)
		case "agent":
			kinds = append(kinds, f)
			e.Agent = p.agent(f)
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
			Err: fmt.Errorf("only one of url, command, builtin or agent may be given; %s is at line %d", kinds[0].Name, kinds[0].Line)})
	}
	if status.Value != nil && len(e.Command) == 0 {
		p.w.Fail(status, errStatusNotCommand)
	}
	if env.Value != nil && len(e.Command) == 0 {
		p.w.Fail(env, errEnvNotCommand)
	}
	if cancellable.Value != nil && e.Cancellable != nil && *e.Cancellable {
		// A claim the tool's type cannot honour is bad config here,
		// before Register would refuse the tool at run time.
		switch {
		case len(e.Command) > 0:
			p.w.Fail(cancellable, errCommandCancel)
		case e.Builtin != "":
			if t, ok := p.builtins[e.Builtin]; ok {
				if _, can := t.(cancel.Canceller); !can {
					p.w.Fail(cancellable, fmt.Errorf("builtin %s cannot be cancelled by key", e.Builtin))
				}
			}
		}
	}
	if e.Agent != nil {
		for _, f := range notForAgent {
			if f.Value != nil {
				p.w.Fail(*f, errNotForAgent)
			}
		}
	}
	if err := checkDurations(Spec{Ceiling: e.Ceiling, P50: e.P50, P95: e.P95, Silence: e.Silence}); err != nil {
		p.w.Report(&yamlfield.Error{Line: m.Value.Line, Field: m.Path + "." + err.field, Err: err.err})
	}
	return e, len(p.w.Errs()) == before
}

// agent parses an entry's agent block.
func (p *configParser) agent(m yamlfield.Field) *AgentEntry {
	a := &AgentEntry{}
	if m.Value.Kind != yaml.MappingNode {
		p.w.Fail(m, yamlfield.ErrNotMapping)
		return a
	}
	for f := range p.w.Fields(m, agentFields...) {
		switch f.Name {
		case "instructions":
			a.Instructions, _ = p.w.String(f)
		case "tools":
			if s, ok := p.w.String(f); ok {
				a.ToolsFile, a.toolsLine = s, f.Line
				if strings.TrimSpace(s) == "" {
					p.w.Fail(f, errors.New("empty; leave tools out for a sub-agent with none"))
				}
			}
		case "model":
			a.Model, _ = p.w.String(f)
		case "api":
			if s, ok := p.w.String(f); ok {
				if !slices.Contains(apis, s) {
					p.w.Fail(f, errAPI)
				}
				a.API = s
			}
		case "max_steps":
			switch n, ok := p.w.Int(f); {
			case ok && n < 1:
				p.w.Fail(f, errMaxSteps)
			case ok:
				a.MaxSteps = n
			}
		}
	}
	return a
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
