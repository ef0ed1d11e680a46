package tools

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/glidepath/glidepath/internal/yamlfield"
	"go.yaml.in/yaml/v3"
)

// An MCPServer is one entry of a tool config's mcpServers (SPEC §5b), in
// the shape other MCP clients use, so that a user can paste theirs: a
// stdio server is a command with its args, env and cwd; a streamable HTTP
// server is a url, with headers. Package tools/mcp connects to it.
type MCPServer struct {
	Name    string            // the key of the entry: the SERVER of mcp__SERVER__TOOL
	Command string            // stdio: the program, started in a process group of its own
	Args    []string          // stdio: its arguments
	Env     map[string]string // stdio: added to what the process inherits ([Environ])
	Cwd     string            // stdio: its working directory; empty: the harness's
	URL     string            // streamable HTTP: the MCP endpoint
	Headers map[string]string // streamable HTTP: sent with every request (never logged)

	// Tools are Glidepath's overrides, by the server's own tool names.
	Tools map[string]MCPTool

	// AllowedTools, when given, are the only tools of the server that are
	// offered (allowed_tools, by the server's own names): a server with
	// many tools need not offer them all to every run.
	AllowedTools []string

	// TrustHints lets the server's readOnlyHint say that a tool only reads;
	// otherwise every tool the config does not call read is a write.
	TrustHints bool

	// ConnectTimeout bounds connecting and listing the server's tools, the
	// run's setup step for it (connect_timeout). Zero: package tools/mcp's
	// default. A server fetched by npx the first time may need more.
	ConnectTimeout time.Duration

	File string // the tools file that names the server, which its tools' orphans record
	Line int    // where the entry starts in the file
}

// An MCPTool is Glidepath's override of one tool of an MCP server. A field
// left out is its zero value.
type MCPTool struct {
	Effect      Effect
	Ceiling     time.Duration
	P50, P95    time.Duration
	MaxAttempts int
	Line        int
}

// Stdio reports whether the server is started as a subprocess.
func (s MCPServer) Stdio() bool { return s.Command != "" }

var (
	mcpServerFields = []string{"type", "command", "args", "env", "cwd", "url", "headers", "tools", "allowed_tools", "trust_hints", "connect_timeout"}
	mcpToolFields   = []string{"effect", "ceiling", "p50", "p95", "max_attempts"}

	errMCPKind = errors.New("one of command (a stdio server) or url (streamable HTTP) is required")
)

// mcpServers parses the mcpServers mapping, in the order written. A
// server given as null ("x": null, or "x:" with nothing after it) is a
// mistake, not a server left out; Map does not yield null values, so
// they are looked for here.
func (p *configParser) mcpServers(m yamlfield.Field) []MCPServer {
	if m.Value.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(m.Value.Content); i += 2 {
			k, v := m.Value.Content[i], m.Value.Content[i+1]
			if k.Kind == yaml.ScalarNode && v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
				p.w.Report(&yamlfield.Error{Line: k.Line, Field: yamlfield.Join(m.Path, k.Value), Err: errMCPKind})
			}
		}
	}
	var out []MCPServer
	for f := range p.w.Map(m) {
		if s, ok := p.mcpServer(f); ok {
			out = append(out, s)
		}
	}
	return out
}

// mcpServer parses one server; it reports whether the server is usable.
func (p *configParser) mcpServer(m yamlfield.Field) (MCPServer, bool) {
	before := len(p.w.Errs())
	s := MCPServer{Name: m.Name, Line: m.Line}
	if m.Name == "" {
		p.w.Fail(m, errors.New("a server needs a name"))
	}
	var kind string
	var kindField yamlfield.Field
	var given []yamlfield.Field // command and url, when given
	for f := range p.w.Fields(m, mcpServerFields...) {
		switch f.Name {
		case "type":
			kind, _ = p.w.String(f)
			kindField = f
		case "command":
			given = append(given, f)
			s.Command, _ = p.w.String(f)
			if s.Command == "" {
				p.w.Fail(f, errNoProgram)
			}
		case "args":
			s.Args = p.scalars(f)
		case "env":
			s.Env = p.env(f)
		case "cwd":
			s.Cwd, _ = p.w.String(f)
		case "url":
			given = append(given, f)
			if u, ok := p.w.String(f); ok {
				s.URL = u
				if err := checkURL(u); err != nil {
					p.w.Fail(f, err)
				}
			}
		case "headers":
			s.Headers = p.stringMap(f)
		case "tools":
			s.Tools = p.mcpTools(f)
		case "allowed_tools":
			s.AllowedTools = p.scalars(f)
			if len(s.AllowedTools) == 0 {
				p.w.Fail(f, errors.New("empty: it would offer none of the server's tools; leave it out to offer them all"))
			}
		case "trust_hints":
			s.TrustHints, _ = p.w.Bool(f)
		case "connect_timeout":
			s.ConnectTimeout, _ = p.w.Duration(f)
		}
	}
	switch len(given) {
	case 0:
		p.w.Fail(m, errMCPKind)
	case 2:
		p.w.Report(&yamlfield.Error{Line: given[1].Line, Field: given[1].Path,
			Err: fmt.Errorf("only one of command or url may be given; %s is at line %d", given[0].Name, given[0].Line)})
	}
	// type is what other clients write; it must agree with what is given.
	switch {
	case kind == "":
	case kind == "sse":
		p.w.Fail(kindField, errors.New(`the SSE transport is not supported: use the server's streamable HTTP endpoint with type "http"`))
	case kind == "stdio" && s.URL != "", (kind == "http" || kind == "streamable-http" || kind == "streamableHttp") && s.Command != "":
		p.w.Fail(kindField, fmt.Errorf("%q does not match what the server gives (command for stdio, url for http)", kind))
	case kind != "stdio" && kind != "http" && kind != "streamable-http" && kind != "streamableHttp":
		p.w.Fail(kindField, errors.New(`must be "stdio" or "http"`))
	}
	if s.URL != "" && (len(s.Args) > 0 || len(s.Env) > 0 || s.Cwd != "") {
		p.w.Fail(m, errors.New("args, env and cwd are for a stdio server, not one at a url"))
	}
	if s.Command != "" && len(s.Headers) > 0 {
		p.w.Fail(m, errors.New("headers are for a server at a url, not a stdio one"))
	}
	return s, len(p.w.Errs()) == before
}

// mcpTools parses a server's per-tool overrides.
func (p *configParser) mcpTools(m yamlfield.Field) map[string]MCPTool {
	out := map[string]MCPTool{}
	for f := range p.w.Map(m) {
		t := MCPTool{Line: f.Line}
		for g := range p.w.Fields(f, mcpToolFields...) {
			switch g.Name {
			case "effect":
				if s, ok := p.w.String(g); ok {
					switch Effect(s) {
					case Read, Write:
						t.Effect = Effect(s)
					default:
						p.w.Fail(g, errEffect)
					}
				}
			case "ceiling":
				t.Ceiling, _ = p.w.Duration(g)
			case "p50":
				t.P50, _ = p.w.Duration(g)
			case "p95":
				t.P95, _ = p.w.Duration(g)
			case "max_attempts":
				switch n, ok := p.w.Int(g); {
				case ok && n < 1:
					p.w.Fail(g, errMaxAttempts)
				case ok:
					t.MaxAttempts = n
				}
			}
		}
		if err := checkDurations(Spec{Ceiling: t.Ceiling, P50: t.P50, P95: t.P95}); err != nil {
			p.w.Report(&yamlfield.Error{Line: f.Line, Field: f.Path + "." + err.field, Err: err.err})
		}
		out[f.Name] = t
	}
	return out
}

// scalars reads a list of scalars.
func (p *configParser) scalars(f yamlfield.Field) []string {
	if f.Value.Kind != yaml.SequenceNode {
		p.w.Fail(f, yamlfield.ErrNotList)
		return nil
	}
	var out []string
	for item := range p.w.Items(f) {
		if s, ok := p.w.Scalar(item); ok {
			out = append(out, s)
		}
	}
	return out
}

// env reads an environment: a mapping of names to scalars. A name must
// be one a process can be given: not empty, without "=" or NUL; a value
// must hold no NUL.
func (p *configParser) env(f yamlfield.Field) map[string]string {
	out := map[string]string{}
	for g := range p.w.Map(f) {
		if strings.ContainsAny(g.Name, "=\x00") || g.Name == "" {
			p.w.Fail(g, errors.New(`not an environment variable's name: empty, or holding "=" or NUL`))
			continue
		}
		if s, ok := p.w.Scalar(g); ok {
			if strings.Contains(s, "\x00") {
				p.w.Fail(g, errors.New("holds NUL, which no environment can"))
				continue
			}
			out[g.Name] = s
		}
	}
	return out
}

// stringMap reads a mapping of names to scalars, such as headers.
func (p *configParser) stringMap(f yamlfield.Field) map[string]string {
	out := map[string]string{}
	for g := range p.w.Map(f) {
		if s, ok := p.w.Scalar(g); ok {
			out[g.Name] = s
		}
	}
	return out
}
