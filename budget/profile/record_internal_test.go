package profile

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// child returns the command that runs this test binary as a helper in mode.
func child(t *testing.T, mode string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Skipf("cannot re-execute the test binary: %v", err)
	}
	cmd := exec.CommandContext(t.Context(), exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+mode)
	return cmd
}

// checkWriters fails t unless the profile at path holds every observation
// that writers 0 to writers−1 recorded, n each, and nothing else.
func checkWriters(t *testing.T, path string, writers, n int) {
	t.Helper()
	p, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	want := (&Profile{}).merge(nil, helperNow)
	for id := range writers {
		want = want.merge(writerObservations(id, n), helperNow)
	}
	for pl, ss := range want.places {
		got := p.places[pl]
		if len(got) != len(ss) {
			t.Errorf("%v: %d observations, want %d: lost %d", pl, len(got), len(ss), len(ss)-len(got))
		}
	}
	if len(p.places) != len(want.places) {
		t.Errorf("%d places, want %d", len(p.places), len(want.places))
	}
	if got, want := string(p.encode()), string(want.encode()); got != want {
		t.Errorf("the profile is not the union of what the writers recorded")
	}
}

// Issue 12: 8 concurrent runs updating one profile lose none of their
// observations. Each writer makes N read-merge-writes of its own, so that
// without the lock they would overwrite each other's.
func TestConcurrentWritersLoseNoObservation(t *testing.T) {
	const writers, n = 8, 12
	t.Run("goroutines", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "state", "profile.json")
		var wg sync.WaitGroup
		errs := make([]error, writers)
		start := make(chan struct{})
		for id := range writers {
			wg.Go(func() {
				<-start
				errs[id] = writeN(path, id, n)
			})
		}
		close(start)
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		checkWriters(t, path, writers, n)
	})
	t.Run("processes", func(t *testing.T) {
		t.Parallel()
		if !crossProcess {
			t.Skip("no lock across processes on this system")
		}
		path := filepath.Join(t.TempDir(), "state", "profile.json")
		cmds := make([]*exec.Cmd, writers)
		var stdins []interface{ Close() error }
		for id := range writers {
			cmd := child(t, fmt.Sprintf("write:%d:%d:%s", id, n, path))
			in, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			cmds[id], stdins = cmd, append(stdins, in)
			t.Cleanup(func() {
				if t.Failed() && stderr.Len() > 0 {
					t.Logf("writer %d: %s", id, stderr.String())
				}
			})
		}
		for _, in := range stdins {
			in.Close() // go
		}
		for id, cmd := range cmds {
			if err := cmd.Wait(); err != nil {
				t.Errorf("writer %d: %v", id, err)
			}
		}
		if t.Failed() {
			return
		}
		checkWriters(t, path, writers, n)
	})
}

// A process that dies in the middle of a write, after its temporary file
// is written and before the rename, leaves the old profile, which is what
// readers see; the next Record removes the temporary file.
func TestCrashMidWriteLeavesTheOldProfile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "profile.json")
	old := []Observation{{Where: here, Kind: "model", Duration: time.Second, At: helperNow}}
	if err := Record(t.Context(), path, old, helperNow); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}

	cmd := child(t, "crash:"+path)
	out, err := cmd.CombinedOutput()
	if ee, ok := errors.AsType[*exec.ExitError](err); !ok || ee.ExitCode() != crashCode {
		t.Fatalf("the writer did not crash where asked: %v\n%s", err, out)
	}
	temps, _ := filepath.Glob(filepath.Join(dir, tempPrefix(path)+"*"))
	if len(temps) != 1 {
		t.Fatalf("temporary files after the crash: %q, want one", temps)
	}
	if data, err := os.ReadFile(temps[0]); err != nil || !strings.Contains(string(data), `"ns":3600000000000`) {
		t.Fatalf("the crashed write's temporary file does not hold its profile: %v\n%s", err, data)
	}

	after, err := os.ReadFile(path)
	if err != nil || string(after) != string(before) {
		t.Fatalf("the profile changed under a write that did not finish: %v\n%s", err, after)
	}
	p, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Summary(helperNow).Kinds; len(got) != 1 || got[0].Count != 1 || got[0].P50 != time.Second {
		t.Fatalf("Load after the crash = %+v, want the old profile's one observation of 1s", got)
	}

	// The dead writer's lock went with it.
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	next := []Observation{{Where: here, Kind: "model", Duration: 2 * time.Second, At: helperNow}}
	if err := Record(ctx, path, next, helperNow); err != nil {
		t.Fatal(err)
	}
	if temps, _ := filepath.Glob(filepath.Join(dir, tempPrefix(path)+"*")); crossProcess && len(temps) != 0 {
		t.Errorf("temporary files after the next Record: %q, want none", temps)
	}
	p, err = Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Summary(helperNow).Kinds; len(got) != 1 || got[0].Count != 2 {
		t.Errorf("after the next Record: %+v, want the old observation and the new one", got)
	}
}

// Record waits for a lock that another writer holds, and gives up with the
// context's cause when the context ends first.
func TestRecordWaitsForTheLockUntilItsContextEnds(t *testing.T) {
	path := filepath.Join(t.TempDir(), "profile.json")
	unlock, err := lock(t.Context(), path+".lock")
	if err != nil {
		t.Fatal(err)
	}
	obs := []Observation{{Where: here, Kind: "model", Duration: time.Second, At: helperNow}}

	stop := errors.New("the run is over")
	ctx, cancel := context.WithTimeoutCause(t.Context(), 50*time.Millisecond, stop)
	defer cancel()
	err = Record(ctx, path, obs, helperNow)
	if !errors.Is(err, stop) || !strings.Contains(err.Error(), "waiting for the lock") {
		t.Fatalf("Record under a held lock = %v, want one that waited for it and ends with %v", err, stop)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Record without the lock wrote the profile: %v", err)
	}

	done := make(chan error, 1)
	go func() { done <- Record(t.Context(), path, obs, helperNow) }()
	time.Sleep(30 * time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("Record returned %v while the lock was held", err)
	default:
	}
	unlock()
	if err := <-done; err != nil {
		t.Fatalf("Record once the lock was released: %v", err)
	}
}
