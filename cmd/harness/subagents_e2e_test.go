package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/trace"
)

// served is a `harness serve` process: its base URL, and its stderr as it
// comes.
type served struct {
	base string

	cmd    *exec.Cmd
	mu     sync.Mutex
	stderr bytes.Buffer
	read   sync.WaitGroup
	term   sync.Once
}

// serveProcess starts `harness serve --addr 127.0.0.1:0 ARGS…` and waits
// for it to say where it listens.
func serveProcess(t *testing.T, args ...string) *served {
	t.Helper()
	return serveProcessEnv(t, nil, args...)
}

// serveProcessEnv is [serveProcess] with env added to the server's
// environment.
func serveProcessEnv(t *testing.T, env []string, args ...string) *served {
	t.Helper()
	cmd := harnessCmd(t, env, append([]string{"serve", "--addr", "127.0.0.1:0"}, args...)...)
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &served{cmd: cmd}
	listening := make(chan string, 1)
	at := regexp.MustCompile(`serving \d+ agents? at (http://\S+)`)
	s.read.Go(func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			s.mu.Lock()
			s.stderr.WriteString(sc.Text() + "\n")
			s.mu.Unlock()
			if m := at.FindStringSubmatch(sc.Text()); m != nil {
				listening <- m[1]
			}
		}
		close(listening)
	})
	t.Cleanup(func() { s.stop(t) })
	select {
	case base, ok := <-listening:
		if !ok {
			t.Fatalf("harness serve ended before it listened:\n%s", s.log())
		}
		s.base = base
	case <-time.After(30 * time.Second):
		t.Fatalf("harness serve did not listen within 30s:\n%s", s.log())
	}
	return s
}

func (s *served) log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stderr.String()
}

// terminate sends SIGTERM, once: a second would end the process at once.
func (s *served) terminate() { s.term.Do(func() { s.cmd.Process.Signal(syscall.SIGTERM) }) }

// stop terminates the process and returns its exit code once it and the
// reading of its stderr have ended.
func (s *served) stop(t *testing.T) int {
	t.Helper()
	if s.cmd.ProcessState == nil {
		s.terminate()
		s.cmd.Wait()
		s.read.Wait()
	}
	return s.cmd.ProcessState.ExitCode()
}

// slowAgent is a tools file with one agent, slowpoke, whose only tool
// hangs for 100s unless its lease ends first.
func slowAgent(t *testing.T) string {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "hang.yaml"), []byte("tools:\n  - name: crawl\n    effect: read\n    command: [sleep, \"100\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "agents.yaml")
	src := "tools:\n  - name: slowpoke\n    description: Researches slowly.\n    effect: read\n    agent:\n      tools: hang.yaml\n"
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func readTraceFile(t *testing.T, path string) []trace.Record {
	t.Helper()
	return readTrace(t, path)
}

// harness run → harness serve → a child whose tool hangs: the child's
// budget is the Budget-Remaining-Ms the parent sent, the child lands
// before the parent's lease ends, and both traces name the same call.
func TestE2EASubAgentInAnotherProcessRunsOnTheParentsLease(t *testing.T) {
	srvTrace := filepath.Join(t.TempDir(), "serve.jsonl")
	s := serveProcess(t, "--tools", slowAgent(t), "--trace", srvTrace)
	parentTools := writeFile(t, "parent.yaml", "tools:\n  - name: slowpoke\n    url: "+s.base+"\n")
	parentTrace := filepath.Join(t.TempDir(), "parent.jsonl")

	stdout, stderr, code := runHarness(t, nil, "run", "--budget", "4s", "--tools", parentTools, "--trace", parentTrace, "--json", "q")

	if res := jsonResult(t, stdout); code != exitOK || res.Status != landing.Complete {
		t.Fatalf("parent exit %d, %+v\nstderr: %s", code, res, stderr)
	}
	if code := s.stop(t); code != 0 {
		t.Errorf("harness serve exited %d after SIGTERM, want 0\n%s", code, s.log())
	}
	var call, callEnd trace.Record
	for _, r := range readTraceFile(t, parentTrace) {
		switch {
		case r.Step == "agent:slowpoke" && r.Event == trace.AttemptStart:
			call = r
		case r.Step == "agent:slowpoke" && r.Event == trace.AttemptEnd:
			callEnd = r
		}
	}
	var start, end trace.Record
	for _, r := range readTraceFile(t, srvTrace) {
		switch r.Event {
		case trace.RunStart:
			start = r
		case trace.RunEnd:
			end = r
		}
	}
	if call.Key == "" || start.Key != call.Key {
		t.Fatalf("the parent's call has key %q, the served child's run_start %q: the traces must agree", call.Key, start.Key)
	}
	if d := start.TotalMs - call.GrantedMs; d > 0 || d < -50 {
		t.Errorf("the child's budget %dms, the Budget-Remaining-Ms sent %dms: want equal, within 50ms", start.TotalMs, call.GrantedMs)
	}
	// elapsed_ms is the time that passed, not capped at total_ms (SPEC §3),
	// and a child past its deadline says late_ms: this fails for a late one.
	if end.Cause != "budget" || end.Result != "partial" || end.ElapsedMs > start.TotalMs || end.LateMs != 0 {
		t.Errorf("the child ended %s/%s at %dms of %dms (late %dms); want partial, budget, inside its budget", end.Result, end.Cause, end.ElapsedMs, start.TotalMs, end.LateMs)
	}
	if callEnd.Outcome != trace.OK || callEnd.ElapsedMs-call.ElapsedMs > call.GrantedMs {
		t.Errorf("the parent's call ended %s after %dms of its %dms lease; want ok, inside it", callEnd.Outcome, callEnd.ElapsedMs-call.ElapsedMs, call.GrantedMs)
	}
	if !strings.Contains(s.log(), "slowpoke "+call.Key+": partial (cause budget)") {
		t.Errorf("the server's log does not name the call:\n%s", s.log())
	}
}

// The protocol of SPEC §5c, spoken to `harness serve` directly: a repeated
// POST with a known key starts no second child, a DELETE lands the child
// now, and SIGTERM lands the rest and exits 0.
func TestE2EHarnessServeKeysCancelsAndShutsDown(t *testing.T) {
	srvTrace := filepath.Join(t.TempDir(), "serve.jsonl")
	s := serveProcess(t, "--tools", slowAgent(t), "--trace", srvTrace, "--max-budget", "1m")
	post := func(key, ms string) (*http.Response, error) {
		req, err := http.NewRequest(http.MethodPost, s.base+"/tools/slowpoke", strings.NewReader(`{"arguments":{"task":"find cats"}}`))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Idempotency-Key", key)
		req.Header.Set("Budget-Remaining-Ms", ms)
		return http.DefaultClient.Do(req)
	}
	output := func(t *testing.T, resp *http.Response) landing.Result {
		t.Helper()
		defer resp.Body.Close()
		var body struct {
			Output landing.Result `json:"output"`
		}
		data, _ := io.ReadAll(resp.Body)
		if err := json.Unmarshal(data, &body); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("answer %d %s (%v)", resp.StatusCode, data, err)
		}
		return body.Output
	}

	// Two POSTs with one key, then a DELETE of it: one child, landed now.
	first := make(chan *http.Response, 1)
	go func() {
		resp, err := post("gp_one", "30000")
		if err != nil {
			t.Error(err)
			close(first)
			return
		}
		first <- resp
	}()
	waitFor(t, func() bool { return running(s.base, "gp_one") })
	second := make(chan *http.Response, 1)
	go func() {
		resp, err := post("gp_one", "30000")
		if err != nil {
			t.Error(err)
			close(second)
			return
		}
		second <- resp
	}()
	time.Sleep(200 * time.Millisecond) // let the second POST join the first: polling a process from outside
	req, _ := http.NewRequest(http.MethodDelete, s.base+"/tools/slowpoke/calls/gp_one", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusAccepted {
		t.Fatalf("DELETE: %v %v", resp, err)
	}
	resp.Body.Close()
	r1, ok1 := <-first
	r2, ok2 := <-second
	if !ok1 || !ok2 {
		t.Fatal("a POST failed")
	}
	a, b := output(t, r1), output(t, r2)
	if a.Cause != landing.CauseCancelled || a.Status != landing.Partial || a.RunID != b.RunID {
		t.Errorf("answers %s/%s run %s and run %s; want one child, landed cancelled, for both POSTs", a.Status, a.Cause, a.RunID, b.RunID)
	}

	// A child still running when SIGTERM comes lands, is answered, and the
	// server exits 0.
	third := make(chan *http.Response, 1)
	go func() {
		resp, err := post("gp_two", "30000")
		if err != nil {
			t.Error(err)
			close(third)
			return
		}
		third <- resp
	}()
	waitFor(t, func() bool { return running(s.base, "gp_two") })
	time.Sleep(200 * time.Millisecond) // the child is at work: polling a process from outside
	s.terminate()
	r3, ok := <-third
	if !ok {
		t.Fatal("the POST before SIGTERM failed")
	}
	if c := output(t, r3); c.Cause != landing.CauseCancelled || c.Status != landing.Partial {
		t.Errorf("the child running at SIGTERM answered %s/%s, want partial, cancelled", c.Status, c.Cause)
	}
	if code := s.stop(t); code != 0 {
		t.Errorf("exit %d after SIGTERM, want 0\n%s", code, s.log())
	}
	if n := strings.Count(readFileString(srvTrace), `"event":"run_start"`); n != 2 {
		t.Errorf("%d children in the server's trace, want 2: the repeated key started none", n)
	}
}

// running reports whether the server says the call with key is running.
func running(base, key string) bool {
	resp, err := http.Get(base + "/tools/slowpoke/calls/" + key)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var st struct{ State string }
	return resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(&st) == nil && st.State == "running"
}

// progressed reports whether the call of slowpoke with key is running and
// its child has reported progress: its run was admitted and has begun.
func progressed(base, key string) bool {
	resp, err := http.Get(base + "/tools/slowpoke/calls/" + key)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var st struct {
		State string
		Units int64
	}
	return resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(&st) == nil && st.State == "running" && st.Units > 0
}

func readFileString(path string) string {
	data, _ := os.ReadFile(path)
	return string(data)
}

// waitFor polls cond, a process's state seen from outside, for up to 30s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out waiting")
		}
		time.Sleep(20 * time.Millisecond) // polling another process: no event to wait on
	}
}

// examples/subagents, as `make subagents` runs it but on a free port: the
// parent's three researchers run at once, and the report over both traces
// finds each child under the parent's step that ran it.
func TestE2ETheSubAgentsExampleRunsAndItsReportShowsTheSlices(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"tools.yaml", "researcher.yaml", "remote.yaml"} {
		data, err := os.ReadFile(filepath.Join("../../examples/subagents", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	srvTrace := filepath.Join(dir, "serve.jsonl")
	s := serveProcess(t, "--tools", filepath.Join(dir, "remote.yaml"), "--trace", srvTrace)
	parentTools := filepath.Join(dir, "tools.yaml")
	data, _ := os.ReadFile(parentTools)
	if !bytes.Contains(data, []byte("http://127.0.0.1:8093")) {
		t.Fatalf("the example's tools.yaml no longer names the server at 127.0.0.1:8093:\n%s", data)
	}
	if err := os.WriteFile(parentTools, bytes.ReplaceAll(data, []byte("http://127.0.0.1:8093"), []byte(s.base)), 0o600); err != nil {
		t.Fatal(err)
	}
	parentTrace := filepath.Join(dir, "parent.jsonl")

	stdout, stderr, code := runHarness(t, nil, "run", "--budget", "20s", "--tools", parentTools, "--trace", parentTrace, "--json", "q")
	if res := jsonResult(t, stdout); code != exitOK || res.Status != landing.Complete {
		t.Fatalf("exit %d, %+v\nstderr: %s", code, res, stderr)
	}
	if code := s.stop(t); code != 0 {
		t.Fatalf("harness serve exited %d\n%s", code, s.log())
	}
	report, stderr, code := runHarness(t, nil, "report", parentTrace, srvTrace)
	if code != exitOK {
		t.Fatalf("report: exit %d: %s", code, stderr)
	}
	// B = 20s: 15s available; alpha is capped at 8s, beta gets 15s less
	// the parent's keep, and so does the remote child, leased as a slice too.
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^1 run: 1 complete`),
		regexp.MustCompile(`(?m)^  agent:alpha\s+1\s+1 complete, 0 partial\s+8s\s+8s`),
		regexp.MustCompile(`(?m)^  agent:beta\s+1\s+1 complete, 0 partial\s+14\.\d+s`),
		regexp.MustCompile(`(?m)^  agent:remote_researcher\s+1\s+1 complete, 0 partial\s+14\.\d+s`),
	} {
		if !want.MatchString(report) {
			t.Errorf("the report does not match %s:\n%s", want, report)
		}
	}
}
