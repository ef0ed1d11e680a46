package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/glidepath/glidepath/landing"
)

// A process that cannot start its run within --max-wait of its own start
// (1ns: no process can) does not start it: the run's labeled result at
// once, cause at_capacity, exit 4, and the line that says so (issue 25).
func TestE2EARunTheProcessCannotStartInTimeIsRefusedWithExit4(t *testing.T) {
	stdout, stderr, code := runHarness(t, nil, "run", "--json", "--max-wait", "1ns", "--budget", "30s", "explain")
	if code != exitAtCapacity {
		t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, exitAtCapacity, stdout, stderr)
	}
	res := jsonResult(t, stdout)
	if res.Status != landing.Partial || res.Cause != landing.CauseAtCapacity || res.Steps != 0 || res.Attempts != 0 {
		t.Errorf("result %+v: want partial, cause at_capacity, not started", res)
	}
	if !strings.Contains(res.Boundary, "At capacity: the run was not started") {
		t.Errorf("boundary %q: want it to say the run was not started, at capacity", res.Boundary)
	}
	if res.Budget.SpentMs >= res.Budget.TotalMs {
		t.Errorf("refused after %dms of %dms: a refusal is at once", res.Budget.SpentMs, res.Budget.TotalMs)
	}
	if !strings.Contains(stderr, "(cause at_capacity)") {
		t.Errorf("stderr %q: want the partial line of cause at_capacity", stderr)
	}
}

// harness serve --max-runs 1: while one child runs, a call with another
// key is answered at once with its labeled result, cause at_capacity, and
// starts no child; the server's trace holds the one child.
func TestE2EHarnessServePastMaxRunsAnswersAtCapacityAtOnce(t *testing.T) {
	srvTrace := t.TempDir() + "/serve.jsonl"
	s := serveProcess(t, "--tools", slowAgent(t), "--trace", srvTrace, "--max-budget", "1m", "--max-runs", "1")
	post := func(key string) (*http.Response, error) {
		req, err := http.NewRequest(http.MethodPost, s.base+"/tools/slowpoke", strings.NewReader(`{"arguments":{"task":"find cats"}}`))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Idempotency-Key", key)
		req.Header.Set("Budget-Remaining-Ms", "30000")
		return http.DefaultClient.Do(req)
	}
	first := make(chan *http.Response, 1)
	go func() {
		resp, err := post("gp_held")
		if err != nil {
			t.Error(err)
			close(first)
			return
		}
		first <- resp
	}()
	// Admitted, not only taken: the server holds the call before its child
	// run reaches the door, and a call that came in between would take the
	// place first. A child reports progress from its first attempt on.
	waitFor(t, func() bool { return progressed(s.base, "gp_held") })

	asked := time.Now()
	resp, err := post("gp_refused")
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	took := time.Since(asked)
	var body struct {
		Output landing.Result `json:"output"`
	}
	if err := json.Unmarshal(data, &body); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("answer %d %s (%v)", resp.StatusCode, data, err)
	}
	if r := body.Output; r.Status != landing.Partial || r.Cause != landing.CauseAtCapacity || r.Attempts != 0 {
		t.Errorf("the call past --max-runs answered %+v, want partial, at_capacity, no attempts", r)
	}
	// At once: well inside the 30s the caller granted, which the held
	// child is still spending.
	if took > 10*time.Second {
		t.Errorf("the refusal took %v", took)
	}
	s.terminate()
	if r, ok := <-first; ok {
		r.Body.Close()
	}
	if code := s.stop(t); code != 0 {
		t.Errorf("exit %d after SIGTERM, want 0\n%s", code, s.log())
	}
	if n := strings.Count(readFileString(srvTrace), `"event":"run_start"`); n != 1 {
		t.Errorf("%d children in the server's trace, want 1: the refused call started none", n)
	}
}
