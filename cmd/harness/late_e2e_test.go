package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/glidepath/glidepath/trace"
)

// Time is not rounded in our favour (SPEC §3): `harness run --budget 2s`
// stopped with SIGSTOP while its tool works, for 3s, and resumed, ends
// past its deadline and says so: --json has spent_ms > total_ms, and the
// trace's run_end elapsed_ms past total_ms and late_ms.
func TestE2EARunStoppedPastItsDeadlineSaysItIsLate(t *testing.T) {
	arrived := make(chan struct{}, 1)
	tool := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		select {
		case arrived <- struct{}{}:
		default:
		}
		select {
		case <-time.After(time.Second):
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"output":"done"}`)
		case <-r.Context().Done():
		}
	}))
	defer tool.Close()
	cfg := writeFile(t, "tools.yaml", "tools:\n  - name: slow\n    url: "+tool.URL+"\n    effect: read\n    max_attempts: 1\n")
	trc := filepath.Join(t.TempDir(), "trace.jsonl")
	cmd := harnessCmd(t, nil, "run", "--budget", "2s", "--json", "--trace", trc, "--tools", cfg, "slow-it")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-arrived:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the tool was never called\nstderr: %s", &stderr)
	}
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second) // the process is stopped this long: the time that must show
	if err := cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()

	// Partial, cause budget; not an internal error: the sinks that keep up
	// got every record of the late run.
	if code := cmd.ProcessState.ExitCode(); code != exitPartial {
		t.Errorf("exit %d, want %d\nstderr: %s", code, exitPartial, &stderr)
	}
	res := jsonResult(t, stdout.String())
	if res.Budget.TotalMs != 2000 || res.Budget.SpentMs <= res.Budget.TotalMs+1000 || res.Budget.RemainingMs != 0 {
		t.Errorf("budget %+v; want spent_ms past total_ms by the 3s stop (less what was left), remaining 0\nstderr: %s", res.Budget, &stderr)
	}
	recs := readTrace(t, trc)
	end := recs[len(recs)-1]
	if end.Event != trace.RunEnd || end.LateMs <= 0 || end.ElapsedMs != end.TotalMs+end.LateMs {
		t.Errorf("last record %s: elapsed %dms of %dms, late %dms; want run_end, late, elapsed = total + late",
			end.Event, end.ElapsedMs, end.TotalMs, end.LateMs)
	}
	t.Logf("spent %dms of %dms; run_end late_ms %d", res.Budget.SpentMs, res.Budget.TotalMs, end.LateMs)
}
