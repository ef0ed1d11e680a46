package main

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/glidepath/glidepath/trace"
)

// Tools that are really there, a model that never answers, and the first
// Ctrl-C's line (issue 18, SPEC §3, §4), as a user meets them: `harness
// run` as a process (see TestMain), real sockets on loopback, real time.
// The bounds are generous; the assertions are about order and outcome.

// closedPort returns a loopback address nothing listens on: a tool
// server that is down.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// blackHole is a listener on loopback that accepts every connection and
// never answers, nor reads: a model server that hangs. accepted counts
// the connections made to it.
type blackHole struct {
	l        net.Listener
	accepted atomic.Int64
	first    chan struct{} // closed at the first connection
	wg       sync.WaitGroup
	mu       sync.Mutex
	conns    []net.Conn
}

func newBlackHole(t *testing.T) *blackHole {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &blackHole{l: l, first: make(chan struct{})}
	h.wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			h.mu.Lock()
			h.conns = append(h.conns, c)
			h.mu.Unlock()
			if h.accepted.Add(1) == 1 {
				close(h.first)
			}
		}
	})
	t.Cleanup(func() {
		l.Close()
		h.wg.Wait()
		h.mu.Lock()
		defer h.mu.Unlock()
		for _, c := range h.conns {
			c.Close()
		}
	})
	return h
}

func (h *blackHole) url() string { return "http://" + h.l.Addr().String() + "/v1" }

func TestE2EACommandThatIsNotThereIsBadConfigBeforeAnyRequest(t *testing.T) {
	cfg := writeFile(t, "tools.yaml", "tools:\n  - name: lister\n    effect: read\n    command: [./no-such-lister, -l]\n")
	trc := filepath.Join(t.TempDir(), "trace.jsonl")

	_, stderr, code := runHarness(t, nil, "run", "--json", "--trace", trc, "--tools", cfg, "list")

	if code != exitUsage {
		t.Errorf("exit %d, want %d; stderr:\n%s", code, exitUsage, stderr)
	}
	for _, want := range []string{"tool lister", `command "./no-such-lister"`, "no such file or directory"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr does not say %q:\n%s", want, stderr)
		}
	}
	if _, err := os.Stat(trc); err == nil {
		t.Error("a trace was written: the run started, though its config is bad")
	}
}

func TestE2EAToolServerThatIsDownIsUnavailableAndWarnedAbout(t *testing.T) {
	base := "http://" + closedPort(t)
	cfg := writeFile(t, "tools.yaml", "tools:\n  - name: lookup\n    effect: read\n    description: look up\n    url: "+base+"\n")

	stdout, stderr, code := runHarness(t, nil, "run", "--json", "--budget", "10s", "--tools", cfg, "look-it-up")

	if code != exitOK {
		t.Fatalf("exit %d, want %d: the run goes on with the rest; stderr:\n%s", code, exitOK, stderr)
	}
	res := jsonResult(t, stdout)
	if len(res.Unavailable) != 1 || res.Unavailable[0].Tool != "lookup" || !strings.Contains(res.Unavailable[0].Why, "is down") ||
		!strings.Contains(res.Unavailable[0].Why, "connection refused") {
		t.Errorf("unavailable %+v, want lookup, its server down", res.Unavailable)
	}
	if !strings.Contains(stderr, "warning: tool lookup is unavailable: its tool server "+base+" is down") {
		t.Errorf("stderr does not warn about lookup by name and reason:\n%s", stderr)
	}
	if strings.Contains(res.Answer, "lookup") {
		t.Errorf("the tool was offered and called: %s", res.Answer)
	}
}

func TestE2ERequireToolsIsBadUsageBeforeTheFirstTurn(t *testing.T) {
	base := "http://" + closedPort(t)
	cfg := writeFile(t, "tools.yaml", "tools:\n  - name: lookup\n    effect: read\n    description: look up\n    url: "+base+"\n")
	trc := filepath.Join(t.TempDir(), "trace.jsonl")

	stdout, stderr, code := runHarness(t, nil, "run", "--require-tools", "--json", "--budget", "10s", "--trace", trc, "--tools", cfg, "look-it-up")

	if code != exitUsage {
		t.Fatalf("exit %d, want %d; stdout %s; stderr:\n%s", code, exitUsage, stdout, stderr)
	}
	if !strings.Contains(stderr, "--require-tools: 1 unavailable: lookup") || !strings.Contains(stderr, "try: harness run --help") {
		t.Errorf("stderr:\n%s", stderr)
	}
	if stdout != "" {
		t.Errorf("a result was printed: %s", stdout)
	}
	var setup, model int
	for _, r := range readTrace(t, trc) {
		if r.Event == trace.AttemptStart && r.Step == "setup" {
			setup++
		}
		if r.Event == trace.AttemptStart && r.Step == "model" {
			model++
		}
	}
	if setup != 1 || model != 0 {
		t.Errorf("trace: %d setup and %d model attempts, want the manifest's setup on the budget and nothing sent to the model", setup, model)
	}
}

func TestE2EAToolWhoseCeilingIsBelowItsProfiledP50IsUnavailable(t *testing.T) {
	// The machine's profile says search, the builtin, takes 3s here; its
	// ceiling is 2s.
	var obs []string
	now := time.Now().UTC()
	for i := range 8 {
		obs = append(obs, fmt.Sprintf(`{"at":%q,"ns":%d}`, now.Add(-time.Duration(i)*time.Second).Format(time.RFC3339Nano), 3*time.Second+time.Duration(i)))
	}
	prof := writeFile(t, "profile.json", `{"version":2,"places":[{"kind":"tool:search","where":"builtin search","obs":[`+strings.Join(obs, ",")+`]}]}`)
	cfg := writeFile(t, "tools.yaml", "tools:\n  - name: search\n    builtin: search\n")

	for _, tc := range []struct {
		name  string
		flags []string
		code  int
	}{
		{"without --require-tools", nil, exitOK},
		{"with --require-tools", []string{"--require-tools"}, exitUsage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A copy each: a run records into its profile.
			p := filepath.Join(t.TempDir(), "profile.json")
			data, err := os.ReadFile(prof)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, data, 0o600); err != nil {
				t.Fatal(err)
			}
			args := append([]string{"run", "--json", "--budget", "10s", "--profile", p, "--tools", cfg}, tc.flags...)
			stdout, stderr, code := runHarness(t, nil, append(args, "find-glidepath")...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, tc.code, stderr)
			}
			why := "its ceiling 2s is below its p50 3s on this machine, so every call would be refused"
			if !strings.Contains(stderr, "warning: tool search is unavailable: "+why) {
				t.Errorf("stderr does not warn about search by name and reason:\n%s", stderr)
			}
			if tc.code != exitOK {
				return
			}
			res := jsonResult(t, stdout)
			if len(res.Unavailable) != 1 || res.Unavailable[0].Tool != "search" || res.Unavailable[0].Why != why {
				t.Errorf("unavailable %+v", res.Unavailable)
			}
		})
	}
}

func TestE2EAModelThatNeverAnswersIsNamedAndNotAskedToLand(t *testing.T) {
	for _, tc := range []struct {
		name, quiet, cause, boundary string
	}{
		{"on its lease", "1h", "budget", "Stopped at step 1: the model sent nothing for 3."},
		{"on the quiet clock", "2s", "quiet", "Stopped at step 1: no progress for 2s: the model's server never answered: no response headers in 2s."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hole := newBlackHole(t)
			trc := filepath.Join(t.TempDir(), "trace.jsonl")

			stdout, stderr, code := runHarness(t, []string{"OPENAI_API_KEY=sk-test"}, "run", "--json", "--model", "gpt-4.1",
				"--base-url", hole.url(), "--budget", "5s", "--quiet", tc.quiet, "--trace", trc, "hello")

			if code != exitPartial {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitPartial, stderr)
			}
			res := jsonResult(t, stdout)
			if string(res.Cause) != tc.cause || !strings.HasPrefix(res.Boundary, tc.boundary) {
				t.Errorf("cause %s, boundary %q; want %s, %q…", res.Cause, res.Boundary, tc.cause, tc.boundary)
			}
			if n := hole.accepted.Load(); n != 1 {
				t.Errorf("%d connections to the hung endpoint, want 1: the landing call is not sent there", n)
			}
			for _, r := range readTrace(t, trc) {
				if r.Event == trace.Landing && r.Result != "harness" {
					t.Errorf("landing by %s, want the harness's summary", r.Result)
				}
			}
		})
	}
}

func TestE2ETheFirstCtrlCSaysTheRunIsLandingAndWithinHowLong(t *testing.T) {
	// B = 8s: R = 2s. The model hangs, so the landing call hangs too, up
	// to R: the line is what the user sees meanwhile.
	hole := newBlackHole(t)
	cmd := harnessCmd(t, []string{"OPENAI_API_KEY=sk-test"}, "run", "--model", "gpt-4.1", "--base-url", hole.url(),
		"--budget", "8s", "--quiet", "1h", "--progress", "never", "q")
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-hole.first:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatal("the model was never asked")
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	type line struct {
		text string
		at   time.Time
	}
	lines := make(chan line, 16)
	var reading sync.WaitGroup
	reading.Go(func() {
		defer close(lines)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- line{sc.Text(), time.Now()}
		}
	})
	var got []line
	for l := range lines {
		got = append(got, l)
	}
	reading.Wait()
	cmd.Wait()
	ended := time.Now()

	if code := cmd.ProcessState.ExitCode(); code != exitPartial {
		t.Fatalf("exit %d, want %d; stderr %+v", code, exitPartial, got)
	}
	want := "harness run: interrupted: landing now, with an answer within 2.0s; press Ctrl-C again to quit at once, without one"
	var note *line
	for i := range got {
		if got[i].text == want {
			note = &got[i]
		}
	}
	if note == nil {
		t.Fatalf("stderr lacks the line %q:\n%+v", want, got)
	}
	if got[0].text != want {
		t.Errorf("the first line on stderr is %q, want the landing note first", got[0].text)
	}
	t.Logf("the line came %v before the process ended", ended.Sub(note.at))
	if !strings.HasPrefix(stdout.String(), "PARTIAL RESULT. Cancelled at step 1") {
		t.Errorf("stdout %q", stdout.String())
	}
	// A cancelled attempt is not a silent one (SPEC §4 names the lease and
	// the quiet clock): the landing call is sent, on a lease of at most R,
	// and the line is what the user reads while it waits. (Connections are
	// not counted: a dial the Ctrl-C overtook may be reused by the landing.)
	if last := got[len(got)-2].text; !strings.Contains(last, "· 1 steps · 2 attempts ·") {
		t.Errorf("summary line %q, want the turn and the landing call", last)
	}
}

// A sub-agent's tool whose server is down is the parent's to report: its
// setup is the parent's, and the parent's result names it with its tools
// file; a command of a sub-agent's tools file that is not there is bad
// config too.
func TestE2EASubAgentsToolsAreReallyThereToo(t *testing.T) {
	dir := t.TempDir()
	base := "http://" + closedPort(t)
	child := filepath.Join(dir, "child.yaml")
	parent := filepath.Join(dir, "tools.yaml")
	write := func(path, body string) {
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(parent, "tools:\n  - name: helper\n    description: Helps.\n    effect: read\n    agent:\n      tools: child.yaml\n")

	write(child, "tools:\n  - name: lookup\n    effect: read\n    description: look up\n    url: "+base+"\n")
	stdout, stderr, code := runHarness(t, nil, "run", "--json", "--budget", "10s", "--tools", parent, "help-me")
	if code != exitOK {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	res := jsonResult(t, stdout)
	if len(res.Unavailable) != 1 || res.Unavailable[0].Tool != "lookup" || !strings.Contains(res.Unavailable[0].Why, "(tools file "+child+")") {
		t.Errorf("unavailable %+v, want the child's lookup, with its tools file", res.Unavailable)
	}

	write(child, "tools:\n  - name: lister\n    effect: read\n    command: [no-such-lister-on-path]\n")
	_, stderr, code = runHarness(t, nil, "run", "--json", "--budget", "10s", "--tools", parent, "help-me")
	if code != exitUsage || !strings.Contains(stderr, `tool lister: command "no-such-lister-on-path": executable file not found in $PATH`) {
		t.Errorf("exit %d, stderr:\n%s\nwant exit %d naming the child's command", code, stderr, exitUsage)
	}
}
