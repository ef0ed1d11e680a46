package tools

import (
	"net/http"
	"slices"
)

// Tools returns the config's tools, ready for [Registry.Register]: a
// [Remote] tool for a url entry, using client; a [Command] for a command
// entry; and for a builtin entry the named tool, under the entry's name,
// with the fields the entry gives overriding the builtin's own spec. An
// agent entry is not among them: a sub-agent runs a child harness, which
// package harness builds from the entry (harness.Toolset).
//
// Each tool is a [ToolsFiler] that names c.File, so that an orphan of it
// records where it came from. A command entry with a status command is a
// [CommandWithStatus], a [cancel.StatusReader]; one without is not.
func (c *Config) Tools(client *http.Client) []Tool {
	out := make([]Tool, 0, len(c.Entries))
	for _, e := range c.Entries {
		switch {
		case e.Agent != nil:
			continue
		case e.URL != "":
			t := Remote(e.spec(Spec{}), e.URL, client).(*remoteTool)
			t.file = c.File
			out = append(out, t)
		case len(e.Command) > 0 && len(e.Status) > 0:
			t := CommandWithStatus(e.spec(Spec{}), e.Command, e.Status).(*statusCommandTool)
			t.file, t.env = c.File, e.Env
			out = append(out, t)
		case len(e.Command) > 0:
			t := Command(e.spec(Spec{}), e.Command).(*commandTool)
			t.file, t.env = c.File, e.Env
			out = append(out, t)
		default:
			t := c.builtins[e.Builtin]
			out = append(out, respec{Tool: t, spec: e.spec(t.Spec()), file: c.File})
		}
	}
	return out
}

// spec lays the entry's fields over base where the entry gives them.
func (e Entry) spec(base Spec) Spec {
	s := base
	s.Name = e.Name
	if e.RemoteAgent {
		s.Kind = AgentKindPrefix + e.Name
	}
	if e.Description != "" {
		s.Description = e.Description
	}
	if e.Parameters != nil {
		s.Parameters = e.Parameters
	}
	if e.Effect != "" {
		s.Effect = e.Effect
	}
	if e.Ceiling != 0 {
		s.Ceiling = e.Ceiling
	}
	if e.P50 != 0 {
		s.P50 = e.P50
	}
	if e.P95 != 0 {
		s.P95 = e.P95
	}
	if e.Silence != 0 {
		s.Silence = e.Silence
	}
	if e.Speculative != nil {
		s.Speculative = *e.Speculative
	}
	if e.Cancellable != nil {
		// true claims the capability (Register checks the type has it);
		// false turns it off, whatever the type can do.
		s.Cancellable, s.NotCancellable = *e.Cancellable, !*e.Cancellable
	}
	if e.MaxAttempts != 0 {
		s.MaxAttempts = e.MaxAttempts
	}
	return s
}

// respec is a tool under a spec other than its own: a builtin as a config
// entry names and tunes it.
type respec struct {
	Tool
	spec Spec
	file string // the tools file of the entry
}

func (t respec) Spec() Spec { return t.spec }

// ToolsFile returns the tools file of the entry that named the builtin.
func (t respec) ToolsFile() string { return t.file }

// Spec returns the spec an entry gives its tool: its fields laid over
// base, the spec of the tool behind it (a builtin's own, or the zero Spec).
func (e Entry) Spec(base Spec) Spec { return e.spec(base) }

// Configs returns c and the tools config of every agent entry reachable
// from it, each once, depth first: every file a run with c may use.
func (c *Config) Configs() []*Config {
	var out []*Config
	var walk func(*Config)
	walk = func(c *Config) {
		if c == nil || slices.Contains(out, c) {
			return
		}
		out = append(out, c)
		for _, e := range c.Entries {
			if e.Agent != nil {
				walk(e.Agent.Tools)
			}
		}
	}
	walk(c)
	return out
}
