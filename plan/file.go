package plan

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/glidepath/glidepath/internal/yamlfield"
	"github.com/glidepath/glidepath/tools"
	"github.com/glidepath/glidepath/tools/mcp"
	"go.yaml.in/yaml/v3"
)

// maxFile bounds a plan file, as tools.MaxConfig bounds a tools file.
const maxFile = tools.MaxConfig

// The fields of a plan file, in the order the help gives them.
var (
	planTopFields   = []string{"budget", "steps", "tool_calls_per_step", "model", "tools"}
	planModelFields = []string{"ceiling", "retries"}
	planToolFields  = []string{"name", "ceiling", "retries"}
)

// Load reads a plan configuration from r, named name in messages. The
// file is YAML or JSON, read field by field by internal/yamlfield, whose
// rules the tools file and the sim scenarios share: an unknown or repeated
// field, a second document or an alias is an error, a null value is left
// out, and every mistake is reported at once with its line. It checks what
// only the file can get wrong, a value that is not a duration or a number;
// ranges are checked by [Make], for flags and file alike.
func Load(name string, r io.Reader) (Config, error) {
	c := Config{Origin: make(map[string]string)}
	data, err := io.ReadAll(io.LimitReader(r, maxFile+1))
	switch {
	case err != nil:
		return Config{}, err
	case len(data) > maxFile:
		return Config{}, fmt.Errorf("%s: larger than %d bytes", name, maxFile)
	}
	root, err := yamlfield.Parse(data)
	if e, ok := errors.AsType[*yamlfield.Error](err); ok {
		return Config{}, fileError(name, e)
	}
	if root == nil {
		return c, nil // an empty file leaves everything to the defaults, as {} does
	}
	p := &parser{file: name, cfg: &c}
	p.document(yamlfield.Root(root))
	found := p.w.Errs()
	if len(found) == 0 {
		return c, nil
	}
	errs := make([]error, len(found))
	for i, e := range found {
		errs[i] = fileError(name, e)
	}
	return Config{}, errors.Join(errs...)
}

// parser walks a plan file into cfg, recording where each value was.
type parser struct {
	file string
	cfg  *Config
	w    yamlfield.Walker
}

func (p *parser) document(root yamlfield.Field) {
	if root.Value.Kind != yaml.MappingNode {
		p.w.Fail(root, fmt.Errorf("not a mapping; a plan file is a mapping of %s", strings.Join(planTopFields, ", ")))
		return
	}
	c := p.cfg
	for f := range p.w.Fields(root, planTopFields...) {
		switch f.Name {
		case "budget":
			c.Budget = p.duration(f)
		case "steps":
			c.Steps = p.integer(f)
		case "tool_calls_per_step":
			c.ToolCallsPerStep = p.integer(f)
		case "model":
			for f := range p.w.Fields(f, planModelFields...) {
				p.limit(&c.Model, f)
			}
		case "tools":
			for item := range p.w.Items(f) {
				if item.Value.Kind != yaml.MappingNode {
					p.w.Fail(item, yamlfield.ErrNotMapping)
					continue
				}
				c.Tools = append(c.Tools, p.tool(item))
			}
		}
	}
}

// tool reads a tools entry. A missing name has no line of its own, so its
// origin is the entry's.
func (p *parser) tool(item yamlfield.Field) Tool {
	p.at(item.Path+".name", item)
	var t Tool
	for f := range p.w.Fields(item, planToolFields...) {
		if f.Name == "name" {
			p.at(f.Path, f)
			t.Name, _ = p.w.String(f)
			continue
		}
		p.limit(&t.Limits, f)
	}
	return t
}

// limit reads f, a ceiling or a retries field, into l.
func (p *parser) limit(l *Limits, f yamlfield.Field) {
	switch f.Name {
	case "ceiling":
		l.Ceiling = p.duration(f)
	case "retries":
		l.Retries = p.integer(f)
	}
}

func (p *parser) duration(f yamlfield.Field) *time.Duration {
	p.at(f.Path, f)
	if d, ok := p.w.Duration(f); ok {
		return &d
	}
	return nil
}

func (p *parser) integer(f yamlfield.Field) *int {
	p.at(f.Path, f)
	if n, ok := p.w.Int(f); ok {
		return &n
	}
	return nil
}

// at records that the value at path was written at f's line.
func (p *parser) at(path string, f yamlfield.Field) {
	p.cfg.Origin[path] = fmt.Sprintf("%s:%d", p.file, f.Value.Line)
}

// fileError restates a mistake in the plan's words: the reasons the
// flags give too, and an unknown field with where it was and what is known
// there.
func fileError(file string, e *yamlfield.Error) error {
	where := file
	if e.Line > 0 {
		where = fmt.Sprintf("%s:%d", file, e.Line)
	}
	if u, ok := errors.AsType[*yamlfield.UnknownFieldError](e.Err); ok {
		place := "in a tools entry"
		switch u.In {
		case "":
			place = "at the top level"
		case "model":
			place = "in model"
		}
		return &FieldError{Where: where, Err: fmt.Errorf("unknown field %q %s (known: %s)", u.Key, place, strings.Join(u.Known, ", "))}
	}
	err := e.Err
	for _, w := range []struct{ walker, plan error }{
		{yamlfield.ErrNotDuration, ErrNotDuration},
		{yamlfield.ErrNotInteger, ErrNotInteger},
		{yamlfield.ErrNegative, ErrNegative},
	} {
		if err == w.walker {
			err = w.plan
		}
	}
	return &FieldError{Where: where, Field: e.Field, Value: e.Value, Err: err}
}

// LoadTools reads the tool config at path as [tools.LoadConfig] does with
// builtins (harness run's are tools/demo's), and returns its tools as the
// plan counts them, recording in origin where each was written. Its errors
// are the *tools.ConfigError values a run would fail with.
func LoadTools(path string, builtins map[string]tools.Tool, origin map[string]string) ([]Tool, error) {
	tc, err := tools.LoadConfig(path, builtins)
	if err != nil {
		return nil, err
	}
	return FromTools(tc, origin), nil
}

// FromTools turns the entries of a tool config into the plan's tools. The
// unbudgeted worst case it feeds keeps the file's own per-call limits and
// takes away only the run's one deadline: each attempt runs to its
// ceiling, and a call is retried as the file says it may be, max_attempts
// − 1 times for a read and never for a write (the config's own rule, SPEC
// §5: a write is not retried blindly). A ceiling the entry leaves out is
// its builtin's, or none: no timeout, as a plain client has.
//
// The tools of its mcpServers count too (issue 24: they were left out
// without a word), each as mcp__SERVER__TOOL called by the MCP SDK: those
// the file names — in allowed_tools, else in tools — with the ceiling,
// effect and max_attempts its tools entry gives. A server without
// allowed_tools may offer tools the file does not name, which plan, which
// connects to nothing, cannot list: they count as one tool
// mcp__SERVER__*, with no ceiling, as any of them would have.
func FromTools(tc *tools.Config, origin map[string]string) []Tool {
	built := map[string]tools.Spec{} // builds nothing that talks: specs, with builtins' filled in
	for _, t := range tc.Tools(nil) {
		built[t.Spec().Name] = t.Spec()
	}
	out := make([]Tool, len(tc.Entries))
	for i, e := range tc.Entries {
		spec, ok := built[e.Name]
		if !ok { // a sub-agent, which package harness builds: its entry is all it is
			spec = e.Spec(tools.Spec{})
		}
		field := fmt.Sprintf("tools[%d]", i)
		where := fmt.Sprintf("%s:%d", tc.File, e.Line)
		for _, f := range []string{".name", ".ceiling", ".retries"} {
			origin[field+f] = where
		}
		t := Tool{Name: e.Name, Caller: &NetHTTP}
		switch {
		case len(e.Command) > 0:
			t.Caller = &OSExec
		case e.Builtin != "":
			t.Caller = &GoFunc
		case e.Agent != nil:
			t.Caller = &SubAgent
		}
		switch {
		case e.Ceiling > 0:
			t.Ceiling = new(e.Ceiling)
		case spec.Ceiling > 0: // a builtin's own
			t.Ceiling = new(spec.Ceiling)
			t.CeilingDefault = &Default{Field: field + ".ceiling", Tool: e.Name, Value: spec.Ceiling.String(),
				Why: "left out: builtin " + e.Builtin + "'s own"}
		}
		retries, note := retriesOf(field, e, spec)
		t.Retries, t.RetriesDefault = &retries, &note
		out[i] = t
	}
	for _, srv := range tc.MCPServers {
		names := srv.AllowedTools
		if len(names) == 0 {
			for name := range srv.Tools {
				names = append(names, name)
			}
			slices.Sort(names)
			names = append(names, "*")
		}
		for _, name := range names {
			field := fmt.Sprintf("tools[%d]", len(out))
			where := fmt.Sprintf("%s:%d", tc.File, srv.Line)
			o, named := srv.Tools[name]
			if named && o.Line > 0 {
				where = fmt.Sprintf("%s:%d", tc.File, o.Line)
			}
			for _, f := range []string{".name", ".ceiling", ".retries"} {
				origin[field+f] = where
			}
			t := Tool{Name: mcp.ToolName(srv.Name, name), Caller: &MCPSDK}
			if name == "*" {
				t.Name = "mcp__" + srv.Name + "__*"
				t.CeilingDefault = &Default{Field: "mcpServers." + srv.Name, Tool: t.Name, Value: "none",
					Why: "its tools the file does not name are listed by the server when a run connects; plan connects to nothing, " +
						"and none of them has a ceiling (give allowed_tools to count only those named)"}
			}
			if o.Ceiling > 0 {
				t.Ceiling = new(o.Ceiling)
			}
			retries, note := mcpRetriesOf(field, t.Name, srv, o)
			t.Retries, t.RetriesDefault = &retries, &note
			out = append(out, t)
		}
	}
	return out
}

// mcpRetriesOf returns how often a run retries a call of the MCP server
// srv's tool name, whose tools entry is o (zero when the file has none),
// and a note that says why: a read max_attempts − 1 times, a write never.
func mcpRetriesOf(field, name string, srv tools.MCPServer, o tools.MCPTool) (int, Default) {
	if o.Effect != tools.Read {
		why := "a write is never retried blindly, so 0 retries"
		switch {
		case o.Effect != "":
		case srv.TrustHints:
			why = "left out: an MCP tool is a write unless its tools entry says read; " + why +
				" (harness run may learn read from the server's readOnlyHint, which plan does not ask)"
		default:
			why = "left out: an MCP tool is a write unless its tools entry says read; " + why
		}
		return 0, Default{Field: field + ".effect", Tool: name, Value: string(tools.Write), Why: why}
	}
	attempts, from := o.MaxAttempts, ""
	if attempts == 0 {
		attempts, from = tools.DefaultMaxAttempts, "left out: tools.DefaultMaxAttempts; "
	}
	why := fmt.Sprintf("%seffect read, so max_attempts − 1 = %d retries", from, attempts-1)
	return attempts - 1, Default{Field: field + ".max_attempts", Tool: name, Value: strconv.Itoa(attempts), Why: why}
}

// retriesOf returns how often a tools file retries the call of entry e,
// whose spec is s, and a note that says why.
func retriesOf(field string, e tools.Entry, s tools.Spec) (int, Default) {
	effect := "read"
	if e.Effect == "" {
		effect += " (builtin " + e.Builtin + "'s own)"
	}
	if s.Effect != tools.Read {
		why := "a write is never retried blindly, so 0 retries"
		switch {
		case e.Effect != "":
		case s.Effect == tools.Write:
			why = "left out: builtin " + e.Builtin + "'s own; " + why
		case e.URL != "":
			why = "left out: a tool is a write until it says it reads; " + why +
				" (harness run may learn read from the server's manifest, which plan does not fetch)"
		default:
			why = "left out: a tool is a write until it says it reads; " + why
		}
		return 0, Default{Field: field + ".effect", Tool: e.Name, Value: string(tools.Write), Why: why}
	}
	attempts, from := s.MaxAttempts, ""
	switch {
	case e.MaxAttempts > 0:
	case attempts > 0:
		from = "left out: builtin " + e.Builtin + "'s own; "
	default:
		attempts, from = tools.DefaultMaxAttempts, "left out: tools.DefaultMaxAttempts; "
	}
	why := fmt.Sprintf("%seffect %s, so max_attempts − 1 = %d retries", from, effect, attempts-1)
	return attempts - 1, Default{Field: field + ".max_attempts", Tool: e.Name, Value: strconv.Itoa(attempts), Why: why}
}
