package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/sim"
)

// Issue 27 item 6: a sub-agent entry's api (beside its model) chooses the
// API its child's model is spoken to in, in harness run and in harness
// serve; an entry that names none speaks the parent's (--api).

// agentAPIs is a tools file of two sub-agents, deep and plain, each
// telling its child who it is in its instructions, so that the sim's
// records say whose request each was; deep and plain say what is given
// of each, as their agent blocks' lines, empty for none.
func agentAPIs(t *testing.T, deep, plain string) string {
	t.Helper()
	entry := func(name, lines string) string {
		return "  - name: " + name + "\n    description: Answers.\n    effect: read\n    agent:\n" +
			"      instructions: You are " + name + ".\n" + lines
	}
	return writeFile(t, "agents.yaml", "tools:\n"+entry("deep", deep)+entry("plain", plain))
}

// simPaths says which path and model each request of srv from the child
// named name went to, by its system message.
func simPaths(srv *sim.Server, name string) (paths, models []string) {
	for _, r := range srv.Requests() {
		if len(r.Messages) > 0 && strings.Contains(r.Messages[0].Content, "You are "+name+".") {
			paths, models = append(paths, r.Path), append(models, r.Model)
		}
	}
	return paths, models
}

// allAre reports whether got has one element or more, all want.
func allAre(got []string, want string) bool {
	if len(got) == 0 {
		return false
	}
	for _, g := range got {
		if g != want {
			return false
		}
	}
	return true
}

const (
	chatPath      = "/v1/chat/completions"
	responsesPath = "/v1/responses"
)

func TestE2EASubAgentEntrysAPIChoosesWhereItsChildsModelIsSpokenTo(t *testing.T) {
	cases := []struct {
		name        string
		api         string // the parent's --api
		deep, plain string // the agents' model and api lines
		wantDeep    [2]string
		wantPlain   [2]string // path and model
		wantParent  string    // the parent's path
	}{
		{
			name: "an entry on responses under a parent on chat speaks the parent's model on the Responses API",
			api:  "chat", deep: "      api: responses\n",
			wantDeep: [2]string{responsesPath, "gpt-5-mini"}, wantPlain: [2]string{chatPath, "gpt-5-mini"}, wantParent: chatPath,
		},
		{
			name: "an entry naming a model and an API speaks that model on that API",
			api:  "chat", deep: "      model: gpt-5-nano\n      api: responses\n", plain: "      model: gpt-5-nano\n",
			wantDeep: [2]string{responsesPath, "gpt-5-nano"}, wantPlain: [2]string{chatPath, "gpt-5-nano"}, wantParent: chatPath,
		},
		{
			name: "an entry on chat under a parent on responses speaks Chat Completions, one naming none the parent's API",
			api:  "responses", deep: "", plain: "      api: chat\n",
			wantDeep: [2]string{responsesPath, "gpt-5-mini"}, wantPlain: [2]string{chatPath, "gpt-5-mini"}, wantParent: responsesPath,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := sim.NewServer(nil)
			defer srv.Close()
			var stdout, stderr bytes.Buffer
			code := run(t.Context(), []string{"run", "--api", tc.api, "--model", "gpt-5-mini", "--base-url", srv.URL,
				"--json", "--budget", "20s", "--profile", "off", "--tools", agentAPIs(t, tc.deep, tc.plain), "ask both"},
				strings.NewReader(""), &stdout, &stderr)
			if res := jsonResult(t, stdout.String()); code != exitOK || res.Status != landing.Complete {
				t.Fatalf("exit %d, %s: %s", code, res.Status, stderr.String())
			}
			for _, c := range []struct {
				child string
				want  [2]string
			}{{"deep", tc.wantDeep}, {"plain", tc.wantPlain}} {
				paths, models := simPaths(srv, c.child)
				if !allAre(paths, c.want[0]) || !allAre(models, c.want[1]) {
					t.Errorf("%s's child sent %v for %v, want %s for %s", c.child, paths, models, c.want[0], c.want[1])
				}
			}
			var parent []string
			for _, r := range srv.Requests() {
				if r.Tools == 2 { // only the parent is offered the two agents
					parent = append(parent, r.Path)
				}
			}
			if !allAre(parent, tc.wantParent) {
				t.Errorf("the parent sent %v, want %s (--api %s)", parent, tc.wantParent, tc.api)
			}
		})
	}
}

func TestE2EHarnessRunRefusesAnAgentEntryOnAnUnknownAPI(t *testing.T) {
	tools := agentAPIs(t, "      api: completions\n", "")
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), []string{"run", "--profile", "off", "--tools", tools, "q"}, strings.NewReader(""), &stdout, &stderr)
	want := tools + `:7: tools[0].agent.api "completions": must be chat or responses; leave api out for the parent's`
	if code != exitUsage || !strings.Contains(stderr.String(), want) {
		t.Errorf("exit %d, stderr %q; want exit %d and %q", code, stderr.String(), exitUsage, want)
	}
}

// harness serve --api responses: a child whose entry names no api speaks
// the Responses API, one whose entry says chat speaks Chat Completions.
func TestE2EHarnessServeAPIIsTheAPIOfChildrenWhoseEntryNamesNone(t *testing.T) {
	srv := sim.NewServer(nil)
	defer srv.Close()
	s := serveProcess(t, "--tools", agentAPIs(t, "", "      api: chat\n"),
		"--model", "gpt-5-mini", "--base-url", srv.URL, "--api", "responses")
	parent := writeFile(t, "parent.yaml", "tools:\n  - name: deep\n    url: "+s.base+"\n  - name: plain\n    url: "+s.base+"\n")

	stdout, stderr, code := runHarness(t, nil, "run", "--budget", "20s", "--tools", parent, "--json", "q")

	if res := jsonResult(t, stdout); code != exitOK || res.Status != landing.Complete {
		t.Fatalf("parent exit %d, %+v\nstderr: %s\nserver: %s", code, res, stderr, s.log())
	}
	for _, c := range []struct{ child, want string }{{"deep", responsesPath}, {"plain", chatPath}} {
		if paths, _ := simPaths(srv, c.child); !allAre(paths, c.want) {
			t.Errorf("%s's child sent %v, want %s", c.child, paths, c.want)
		}
	}
}

func TestHarnessServeRefusesAnUnknownAPI(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), []string{"serve", "--tools", agentAPIs(t, "", ""), "--api", "completions"},
		strings.NewReader(""), &stdout, &stderr)
	want := `harness serve: --api "completions": want chat or responses`
	if code != exitUsage || !strings.Contains(stderr.String(), want) || !strings.Contains(stderr.String(), "harness serve --help") {
		t.Errorf("exit %d, stderr %q; want exit %d, %q and a hint", code, stderr.String(), exitUsage, want)
	}
}
