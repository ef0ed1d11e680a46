package harness_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"encoding/json"

	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/trace"
)

// buildHarness builds the harness command into a folder of the test's.
func buildHarness(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "harness")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/glidepath/glidepath/cmd/harness").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// The "hung cancel" case of issue 17, from outside, on real sockets: `harness
// run --budget 2s --quiet 500ms` with a tool whose POST and DELETE both
// hang. The quiet clock lands the run at about 500ms; the process then ends
// within the cancel's grace (100ms) and a little for the exit (50ms), far
// before D, where it used to wait for the cancel's lease, until 1.95s.
func TestAHarnessRunWhoseCancelHangsEndsWithinTheGraceOfItsLanding(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the harness command")
	}
	bin := buildHarness(t)
	hang := func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		<-r.Context().Done()
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /tools", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"tools":[{"name":"crawl","description":"Crawls.","parameters":{"type":"object"},"effect":"read","cancellable":true}]}`)
	})
	mux.HandleFunc("POST /tools/crawl", hang)
	mux.HandleFunc("DELETE /tools/crawl/calls/{key}", hang)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	dir := t.TempDir()
	toolsFile := filepath.Join(dir, "tools.json")
	entry := fmt.Sprintf(`{"tools":[{"name":"crawl","url":%q,"effect":"read","cancellable":true,"max_attempts":1}]}`, srv.URL)
	if err := os.WriteFile(toolsFile, []byte(entry), 0o600); err != nil {
		t.Fatal(err)
	}
	tracePath := filepath.Join(dir, "trace.jsonl")
	cmd := exec.Command(bin, "run", "--budget", "2s", "--quiet", "500ms", "--tools", toolsFile, "--trace", tracePath,
		"--journal", filepath.Join(dir, "orphans.jsonl"), "--profile", "off", "--json", "find cats")
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+dir)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr

	began := time.Now()
	err := cmd.Run()
	ended := time.Now()

	if ee, ok := errors.AsType[*exec.ExitError](err); !ok || ee.ExitCode() != 3 {
		t.Fatalf("harness run: %v, want exit 3 (partial)\nstderr: %s", err, stderr.String())
	}
	var res landing.Result
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("--json: %v\n%s", err, stdout.String())
	}
	if res.Cause != landing.CauseQuiet || len(res.InFlight) != 1 || res.InFlight[0].State != landing.StateAbandoned {
		t.Errorf("result %+v; want quiet, crawl abandoned: its cancel was never answered", res)
	}
	f, err := os.Open(tracePath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := trace.ReadRecords(f)
	if err != nil {
		t.Fatal(err)
	}
	landed := only(recs, trace.Landing, "")
	if len(landed) != 1 {
		t.Fatalf("%d landing records, want 1", len(landed))
	}
	if after := ended.Sub(landed[0].TS); after > 150*time.Millisecond {
		t.Errorf("the process ended %v after the landing, want within 150ms: the cancel's grace and the exit", after)
	}
	if took := ended.Sub(began); took > 1500*time.Millisecond {
		t.Errorf("the process took %v, want far less than D = 2s", took)
	}
	for _, r := range only(recs, trace.CancelSent, "tool:crawl") {
		if r.State != "sent" {
			t.Errorf("cancel_sent %+v, want only sent: no answer came", r)
		}
	}
	t.Logf("landing at %dms, process ended %v after it, %v after it began", landed[0].ElapsedMs,
		ended.Sub(landed[0].TS).Round(time.Millisecond), ended.Sub(began).Round(time.Millisecond))
}
