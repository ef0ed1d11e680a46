package main

import (
	"net/url"
	"strings"

	"github.com/glidepath/glidepath/sim"
	"github.com/glidepath/glidepath/tools"
	"github.com/glidepath/glidepath/tools/mcp"
)

// simPlace is where the embedded simulated model runs: its loopback port
// changes every run, its latency does not.
const simPlace = "sim (embedded)"

// openAIHost is where a model runs when --base-url is not given: the SDK's
// default server.
const openAIHost = "api.openai.com"

// placer says where a run calls each of its step kinds, for the latency
// profile (SPEC §5b): the model's name and its server's host; a tool's URL,
// command or builtin; an MCP server's command or URL; a sub-agent's entry.
// A kind's history at one place never estimates it at another. A kind the
// run does not know is placed nowhere ("") and gets no history.
type placer struct {
	model string            // "MODEL @ HOST", or simPlace
	kinds map[string]string // tool and agent kinds of the tools file
	mcp   []mcpPlace        // MCP servers, whose tools are known only once listed
}

type mcpPlace struct {
	prefix string // "tool:mcp__SERVER__": the kinds of the server's tools
	where  string
}

// newPlacer places the run's model and the tools of tc (nil: none).
func newPlacer(modelName, baseURL string, tc *tools.Config) *placer {
	p := &placer{model: modelPlace(modelName, baseURL), kinds: map[string]string{}}
	if tc == nil {
		return p
	}
	for _, e := range tc.Entries {
		kind, where := tools.KindPrefix+e.Name, ""
		switch {
		case e.Agent != nil:
			kind, where = tools.AgentKindPrefix+e.Name, "agent "+e.Name+" of "+tc.File
		case e.URL != "":
			where = strings.TrimSuffix(e.URL, "/") + "/tools/" + e.Name
			if e.RemoteAgent {
				kind = tools.AgentKindPrefix + e.Name
			}
		case len(e.Command) > 0:
			where = "command " + strings.Join(e.Command, " ")
		case e.Builtin != "":
			where = "builtin " + e.Builtin
		}
		p.kinds[kind] = where
	}
	for _, s := range tc.MCPServers {
		where := "mcp " + s.Name + ": " + s.URL
		if s.URL == "" {
			where = "mcp " + s.Name + ": " + strings.Join(append([]string{s.Command}, s.Args...), " ")
		}
		p.mcp = append(p.mcp, mcpPlace{prefix: tools.KindPrefix + mcp.ToolName(s.Name, ""), where: where})
	}
	return p
}

// modelPlace is the model's name beside its server's host: one model's
// latency never refuses another's calls, nor one provider's another's.
func modelPlace(name, baseURL string) string {
	if name == sim.ModelID && baseURL == "" {
		return simPlace
	}
	host := openAIHost
	if u, err := url.Parse(baseURL); err == nil && u.Host != "" {
		host = u.Host
	}
	return name + " @ " + host
}

// where returns the place of kind, or "" for a kind the run does not know.
func (p *placer) where(kind string) string {
	if kind == "model" {
		return p.model
	}
	if w, ok := p.kinds[kind]; ok {
		return w
	}
	for _, m := range p.mcp {
		if strings.HasPrefix(kind, m.prefix) {
			return m.where
		}
	}
	return ""
}
