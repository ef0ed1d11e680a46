package plan

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/glidepath/glidepath/tools"
	"github.com/glidepath/glidepath/tools/demo"
)

func TestPlanToolsKeepsEachEntrysLimitsWithoutTheDeadline(t *testing.T) {
	cases := []struct {
		name        string
		entry       string // one tools entry, indented under "tools:"
		wantCeiling *time.Duration
		wantRetries int
		wantLib     *Library
		wantNotes   []string // "field=value: why" of the notes
	}{
		{
			name:        "a builtin without a ceiling gets the builtin's own, and a read retries max_attempts − 1 times",
			entry:       "- name: search\n  builtin: search\n",
			wantCeiling: new(2 * time.Second),
			wantRetries: tools.DefaultMaxAttempts - 1,
			wantLib:     &GoFunc,
			wantNotes: []string{
				"tools[0].ceiling=2s: left out: builtin search's own",
				"tools[0].max_attempts=3: left out: tools.DefaultMaxAttempts; effect read (builtin search's own), so max_attempts − 1 = 2 retries",
			},
		},
		{
			name:        "a builtin's ceiling and attempts given by its entry win",
			entry:       "- name: s\n  builtin: search\n  ceiling: 5s\n  max_attempts: 1\n",
			wantCeiling: new(5 * time.Second),
			wantRetries: 0,
			wantLib:     &GoFunc,
			wantNotes:   []string{"tools[0].max_attempts=1: effect read (builtin search's own), so max_attempts − 1 = 0 retries"},
		},
		{
			name:        "a builtin the entry makes a write is not retried",
			entry:       "- name: s\n  builtin: search\n  effect: write\n",
			wantCeiling: new(2 * time.Second),
			wantRetries: 0,
			wantLib:     &GoFunc,
			wantNotes: []string{
				"tools[0].ceiling=2s: left out: builtin search's own",
				"tools[0].effect=write: a write is never retried blindly, so 0 retries",
			},
		},
		{
			name:        "a remote read with its own attempts",
			entry:       "- name: lookup\n  url: http://127.0.0.1:9\n  effect: read\n  ceiling: 5s\n  max_attempts: 4\n",
			wantCeiling: new(5 * time.Second),
			wantRetries: 3,
			wantLib:     &NetHTTP,
			wantNotes:   []string{"tools[0].max_attempts=4: effect read, so max_attempts − 1 = 3 retries"},
		},
		{
			name:        "a remote tool that states no effect is a write, and its manifest is not fetched",
			entry:       "- name: pay\n  url: http://127.0.0.1:9\n",
			wantRetries: 0,
			wantLib:     &NetHTTP,
			wantNotes: []string{"tools[0].effect=write: left out: a tool is a write until it says it reads; a write is never retried blindly, " +
				"so 0 retries (harness run may learn read from the server's manifest, which plan does not fetch)"},
		},
		{
			name:        "a command without a ceiling has no timeout, as os/exec sets none",
			entry:       "- name: grep\n  command: [grep, -r, x]\n  effect: read\n  max_attempts: 2\n",
			wantRetries: 1,
			wantLib:     &OSExec,
			wantNotes:   []string{"tools[0].max_attempts=2: effect read, so max_attempts − 1 = 1 retries"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := "tools:\n" + indent(tc.entry)
			tc2, err := tools.ParseConfig("t.yaml", []byte(src), demo.Builtins())
			if err != nil {
				t.Fatal(err)
			}
			origin := map[string]string{}
			got := FromTools(tc2, origin)
			if len(got) != 1 {
				t.Fatalf("%d tools, want 1", len(got))
			}
			tool := got[0]
			if !equalPtr(tool.Ceiling, tc.wantCeiling) || tool.Retries == nil || *tool.Retries != tc.wantRetries {
				t.Errorf("ceiling %v retries %v, want %v and %d", deref(tool.Ceiling), deref(tool.Retries), deref(tc.wantCeiling), tc.wantRetries)
			}
			if tool.Caller != tc.wantLib {
				t.Errorf("called by %q, want %q", tool.Caller.whyCeiling, tc.wantLib.whyCeiling)
			}
			var notes []string
			for _, n := range []*Default{tool.CeilingDefault, tool.RetriesDefault} {
				if n != nil {
					notes = append(notes, n.Field+"="+n.Value+": "+n.Why)
				}
			}
			if !slices.Equal(notes, tc.wantNotes) {
				t.Errorf("notes:\n got %q\nwant %q", notes, tc.wantNotes)
			}
			if origin["tools[0].ceiling"] != "t.yaml:2" || origin["tools[0].retries"] != "t.yaml:2" {
				t.Errorf("origin %v, want the entry's line for each value", origin)
			}
		})
	}
}

func indent(s string) string {
	lines := strings.SplitAfter(s, "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = "  " + l
		}
	}
	return strings.Join(lines, "")
}

func equalPtr[T comparable](a, b *T) bool {
	return a == nil && b == nil || a != nil && b != nil && *a == *b
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

func TestMakePlanNamesWhatCallsAToolWithoutACeiling(t *testing.T) {
	p, err := Make(Config{
		Steps: new(1), Model: Limits{Ceiling: new(time.Second), Retries: new(0)},
		Tools: []Tool{
			{Name: "grep", Limits: Limits{Retries: new(0)}, Caller: &OSExec},
			{Name: "think", Limits: Limits{Retries: new(0)}, Caller: &GoFunc},
			{Name: "web", Limits: Limits{Retries: new(0)}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"tool grep has no ceiling and os/exec sets no timeout",
		"tool think has no ceiling and a Go function runs until it returns",
		"tool web has no ceiling and net/http sets no timeout",
	}
	if !slices.Equal(p.Unbounded, want) {
		t.Errorf("unbounded because %q, want %q", p.Unbounded, want)
	}
}

// The tools of a tools file's mcpServers count in the worst case, called
// by the MCP SDK (issue 24: they were left out without a word): those the
// file names, with its tools entries' limits, and for a server without
// allowed_tools, the tools the file cannot name as one without a ceiling.
func TestPlanToolsCountsTheMCPServersTools(t *testing.T) {
	cases := []struct {
		name    string
		servers string // under "mcpServers:"
		want    []string
	}{
		{
			name: "allowed_tools are the tools offered, each with its tools entry",
			servers: "demo:\n  url: http://127.0.0.1:9/mcp\n  allowed_tools: [search, commit]\n" +
				"  tools:\n    search: {effect: read, ceiling: 5s, max_attempts: 2}\n    other: {ceiling: 1s}\n",
			want: []string{"mcp__demo__search ceiling 5s retries 1", "mcp__demo__commit ceiling none retries 0"},
		},
		{
			name:    "without allowed_tools the tools the file cannot name count as one without a ceiling",
			servers: "local:\n  command: sh\n  tools:\n    lookup: {effect: read, ceiling: 2s}\n",
			want:    []string{"mcp__local__lookup ceiling 2s retries 2", "mcp__local__* ceiling none retries 0"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc2, err := tools.ParseConfig("t.yaml", []byte("mcpServers:\n"+indent(tc.servers)), nil)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, tool := range FromTools(tc2, map[string]string{}) {
				ceiling := "none"
				if tool.Ceiling != nil {
					ceiling = tool.Ceiling.String()
				}
				if tool.Caller != &MCPSDK {
					t.Errorf("%s is called by %q, want the MCP SDK", tool.Name, tool.Caller.whyCeiling)
				}
				got = append(got, fmt.Sprintf("%s ceiling %s retries %d", tool.Name, ceiling, deref(tool.Retries)))
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("tools\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}
