package tools

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/trace"
	"github.com/glidepath/glidepath/watchdog"
)

// Subprocess tests run real processes: they assert outcome and order, and
// bound time generously.

func TestASubprocessIsKilledWithItsChildrenWhenItsLeaseEnds(t *testing.T) {
	pidfile := filepath.Join(t.TempDir(), "child.pid")
	script := `echo started; sleep 60 & echo $! > "$1"; wait`
	spec := Spec{Name: "slow", Effect: Write, Ceiling: 300 * time.Millisecond}
	reg := mustRegister(t, Command(spec, []string{"sh", "-c", script, "sh", pidfile}))
	start := time.Now()

	res := reg.Call(t.Context(), &Run{Budget: newBudget(t, time.Minute)}, "slow", nil)

	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the call took %v; its lease was 300ms", took)
	}
	// A write cut short may have done its work: with no status to ask, it
	// is an orphan, whatever was killed.
	if !res.CutShort || res.State != StateOrphaned || res.Outcome != trace.GaveUp || !errors.Is(res.Cause, budget.ErrLeaseExpired) {
		t.Errorf("result %+v", res)
	}
	var out string
	if err := json.Unmarshal(res.Output, &out); err != nil || out != "started\n" {
		t.Errorf("output %s, want the output so far as a string", res.Output)
	}
	data, err := os.ReadFile(pidfile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	// The child was killed with the group. Until init reaps it, it is a
	// zombie: dead, holding only its pid.
	deadline := time.Now().Add(5 * time.Second)
	for !gone(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("child %d still running 5s after its lease ended", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// gone reports whether process pid has ended: it no longer exists
// (kill 0 says ESRCH) or is a zombie waiting to be reaped.
func gone(pid int) bool {
	if errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return errors.Is(err, os.ErrNotExist)
	}
	// The state follows the command name, which is in parentheses.
	_, rest, ok := strings.Cut(string(stat), ") ")
	return ok && strings.HasPrefix(rest, "Z")
}

func TestASubprocessAnswers(t *testing.T) {
	cases := []struct {
		name     string
		script   string
		want     trace.Outcome
		wantOut  string
		wantErr  string
		cutShort bool
	}{
		{"its JSON output is used as it is", `cat`, trace.OK, `{"x":1}`, "", false},
		{"other output is a string", `echo hello`, trace.OK, `"hello\n"`, "", false},
		{"no output is an empty string", `true`, trace.OK, `""`, "", false},
		{"invalid UTF-8 is replaced", `printf 'a\377b'`, trace.OK, "\"a\uFFFDb\"", "", false},
		{"a non-zero exit carries stderr's tail", `echo out; echo "bad input" >&2; exit 3`, trace.UpstreamError, "", "exit status 3: bad input", false},
		{"output past the bound is cut", `head -c 1100000 /dev/zero | tr '\0' a`, trace.OK, "", "", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reg := mustRegister(t, Command(Spec{Name: "sh", Effect: Read}, []string{"sh", "-c", tc.script}))
			res := reg.Call(t.Context(), &Run{Budget: newBudget(t, time.Minute)}, "sh", json.RawMessage(`{"x": 1}`))
			if res.Outcome != tc.want || res.CutShort != tc.cutShort || res.Attempts != 1 {
				t.Errorf("result outcome %s cut %v attempts %d (err %q)", res.Outcome, res.CutShort, res.Attempts, res.Err)
			}
			if tc.wantOut != "" && string(res.Output) != tc.wantOut {
				t.Errorf("output %s, want %s", res.Output, tc.wantOut)
			}
			if !strings.Contains(res.Err, tc.wantErr) {
				t.Errorf("Err %q, want it to contain %q", res.Err, tc.wantErr)
			}
			if tc.cutShort {
				var s string
				if err := json.Unmarshal(res.Output, &s); err != nil || len(s) != MaxOutput {
					t.Errorf("cut output is %d bytes, want %d", len(s), MaxOutput)
				}
			}
		})
	}
}

func TestASubprocessThatCannotStartIsAToolError(t *testing.T) {
	reg := mustRegister(t, Command(Spec{Name: "gone", Effect: Read}, []string{filepath.Join(t.TempDir(), "missing")}))
	res := reg.Call(t.Context(), &Run{Budget: newBudget(t, time.Minute)}, "gone", nil)
	if res.Outcome != trace.UpstreamError || res.Attempts != 1 || !strings.Contains(res.Err, "missing") {
		t.Errorf("result %+v", res)
	}
}

func TestWhatASubprocessLeavesRunningIsKilledWhenItExits(t *testing.T) {
	// The child does not hold the tool's output open, so nothing but the
	// group kill ends it.
	script := `sleep 60 >/dev/null 2>&1 </dev/null & echo $!`
	reg := mustRegister(t, Command(Spec{Name: "bg", Effect: Read}, []string{"sh", "-c", script}))

	res := reg.Call(t.Context(), &Run{Budget: newBudget(t, time.Minute)}, "bg", nil)

	if res.Outcome != trace.OK || res.CutShort {
		t.Fatalf("result %+v", res)
	}
	var pid int
	if err := json.Unmarshal(res.Output, &pid); err != nil || pid <= 0 {
		t.Fatalf("output %s, want the child's pid", res.Output)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) }) // should the test fail
	deadline := time.Now().Add(5 * time.Second)
	for !gone(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("child %d still running 5s after its tool exited", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestASubprocessLearnsItsLeaseAndKeyAndReportsProgressOnFD3(t *testing.T) {
	script := `echo '{"units":1,"total":3,"message":"compiling"}' >&3
echo 'not progress' >&3
head -c 70000 /dev/zero | tr '\0' x >&3; echo >&3
echo '{"units":1,"total":3}' >&3
echo '{"units":2,"total":3,"message":"testing"}' >&3
echo "$GLIDEPATH_BUDGET_REMAINING_MS $GLIDEPATH_IDEMPOTENCY_KEY"`
	spec := Spec{Name: "build", Effect: Read, Ceiling: 20 * time.Second}
	reg := mustRegister(t, Command(spec, []string{"sh", "-c", script}))
	rec := newRecorder(t)

	res := reg.Call(t.Context(), &Run{Budget: newBudget(t, time.Minute), Observer: rec.observer()}, "build", nil)

	var out string
	if err := json.Unmarshal(res.Output, &out); err != nil || res.Err != "" {
		t.Fatalf("result %+v", res)
	}
	lease, key, _ := strings.Cut(strings.TrimSpace(out), " ")
	if ms, err := strconv.Atoi(lease); err != nil || ms <= 19000 || ms > 20000 || key != string(res.Key) {
		t.Errorf("the process saw lease %q and key %q; want its 20s ceiling in ms and the call's key %s", lease, key, res.Key)
	}
	// Two heartbeats were progress; the repeat was not, and the line that
	// is not JSON was not a heartbeat at all, nor was the line longer than
	// a heartbeat may be, which silences none of the lines after it.
	if p, stale := rec.count(watchdog.Progress), rec.count(watchdog.StaleProgress); p != 2 || stale != 1 {
		t.Errorf("%d heartbeats and %d stale ones, want 2 and 1 (events %v)", p, stale, rec.kinds())
	}
	var msgs []string
	for _, s := range rec.signals {
		if s.Event == watchdog.Progress {
			msgs = append(msgs, s.Message)
		}
	}
	if !slices.Equal(msgs, []string{"compiling", "testing"}) {
		t.Errorf("progress messages %q", msgs)
	}
}
