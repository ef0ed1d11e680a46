package cancel_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/glidepath/glidepath/cancel"
)

var ts = time.Date(2025, 3, 14, 15, 9, 26, 535897932, time.UTC)

func entry(k cancel.Key, state string) cancel.Entry {
	return cancel.Entry{
		TS:             ts,
		RunID:          "run-1",
		Tool:           "pay",
		URL:            "http://127.0.0.1:8080/base?a=1&b=2",
		IdempotencyKey: k,
		ArgsSHA256:     cancel.ArgsSHA256([]byte(`{"amount":5}`)),
		State:          state,
	}
}

func appendAll(t *testing.T, path string, entries ...cancel.Entry) {
	t.Helper()
	j, err := cancel.OpenJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if err := j.Append(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
}

func readAll(t *testing.T, path string) []cancel.Entry {
	t.Helper()
	entries, err := cancel.ReadJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	return entries
}

func TestJournalRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "glidepath", "orphans.jsonl")
	want := []cancel.Entry{entry("gp_a", cancel.Open), entry("gp_b", cancel.Open), entry("gp_a", "done")}
	appendAll(t, path, want[:2]...)
	appendAll(t, path, want[2]) // a second process appends to the same file
	got := readAll(t, path)
	if !slices.EqualFunc(got, want, func(a, b cancel.Entry) bool { return a == b }) {
		t.Errorf("read back\n%+v\nwant\n%+v", got, want)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	first := `{"ts":"2025-03-14T15:09:26.535897932Z","run_id":"run-1","tool":"pay","url":"http://127.0.0.1:8080/base?a=1&b=2","idempotency_key":"gp_a","args_sha256":"7e84cbf0f7a7c92c037058665d66152f8eb8580ab2534e52c877bccceb9cc7bf","state":"open"}` + "\n"
	if !strings.HasPrefix(string(raw), first) || strings.Count(string(raw), "\n") != 3 {
		t.Errorf("file is\n%s\nwant three lines, the first\n%s", raw, first)
	}
}

func TestJournalIsPrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new")
	path := filepath.Join(dir, "orphans.jsonl")
	appendAll(t, path, entry("gp_a", cancel.Open))
	for _, c := range []struct {
		name string
		want fs.FileMode
	}{{dir, fs.ModeDir | 0o700}, {path, 0o600}} {
		fi, err := os.Stat(c.name)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != c.want {
			t.Errorf("%s has mode %v, want %v", c.name, fi.Mode(), c.want)
		}
	}
}

func TestAppendFillsAZeroTimestamp(t *testing.T) {
	path := filepath.Join(t.TempDir(), "orphans.jsonl")
	e := entry("gp_a", cancel.Open)
	e.TS = time.Time{}
	before := time.Now()
	appendAll(t, path, e)
	got := readAll(t, path)[0].TS
	if got.Before(before.Add(-time.Second)) || got.After(time.Now().Add(time.Second)) {
		t.Errorf("TS = %v, want about now (%v)", got, before)
	}
}

func TestAppendRefusesWhatCouldNotBeReadBack(t *testing.T) {
	noKey, noState, huge := entry("", cancel.Open), entry("gp_a", ""), entry("gp_a", cancel.Open)
	huge.URL = "http://x/" + strings.Repeat("a", cancel.MaxLine)
	cases := []struct {
		name    string
		e       cancel.Entry
		wantErr string
	}{
		{"an entry without a key", noKey, "cancel: journal entry without idempotency_key"},
		{"an entry without a state", noState, "cancel: journal entry without state"},
		{"an entry longer than a line may be", huge, "cancel: journal entry of 65"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "orphans.jsonl")
			j, err := cancel.OpenJournal(path)
			if err != nil {
				t.Fatal(err)
			}
			defer j.Close()
			if err := j.Append(tc.e); err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) {
				t.Errorf("Append = %v, want %q", err, tc.wantErr)
			}
			if fi, err := os.Stat(path); err != nil || fi.Size() != 0 {
				t.Errorf("journal has %d bytes (%v), want none written", fi.Size(), err)
			}
		})
	}
}

func TestALineOfExactlyMaxLineBytesIsWrittenAndRead(t *testing.T) {
	e := entry("gp_a", cancel.Open)
	e.URL = ""
	short, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	e.URL = strings.Repeat("a", cancel.MaxLine-len(short)-1) // -1 for the newline
	path := filepath.Join(t.TempDir(), "orphans.jsonl")
	appendAll(t, path, e)
	if fi, err := os.Stat(path); err != nil || fi.Size() != cancel.MaxLine {
		t.Fatalf("journal of %d bytes (%v), want exactly MaxLine", fi.Size(), err)
	}
	if got := readAll(t, path); len(got) != 1 || got[0] != e {
		t.Errorf("read back %d entries, want the one written", len(got))
	}
}

func TestAppendAfterCloseFails(t *testing.T) {
	j, err := cancel.OpenJournal(filepath.Join(t.TempDir(), "orphans.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if err := j.Append(entry("gp_a", cancel.Open)); !errors.Is(err, os.ErrClosed) {
		t.Errorf("Append after Close = %v, want os.ErrClosed", err)
	}
}

func TestTheZeroJournalFailsInsteadOfBlocking(t *testing.T) {
	var j cancel.Journal
	if err := j.Append(entry("gp_a", cancel.Open)); err == nil {
		t.Error("Append on the zero Journal succeeded")
	}
	if err := j.Close(); err == nil {
		t.Error("Close on the zero Journal succeeded")
	}
}

func TestConcurrentAppendsAreAllPresentOneLineEach(t *testing.T) {
	const journals, writers, each = 2, 8, 25 // two journals: two open files, as two processes have
	path := filepath.Join(t.TempDir(), "orphans.jsonl")
	var wg sync.WaitGroup
	for jn := range journals {
		j, err := cancel.OpenJournal(path)
		if err != nil {
			t.Fatal(err)
		}
		defer j.Close()
		for w := range writers {
			wg.Go(func() {
				for i := range each {
					if err := j.Append(entry(cancel.Key(fmt.Sprintf("gp_%d_%d_%d", jn, w, i)), cancel.Open)); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
	}
	wg.Wait()
	got := readAll(t, path)
	if len(got) != journals*writers*each {
		t.Fatalf("read %d entries, want %d", len(got), journals*writers*each)
	}
	seen := map[cancel.Key]bool{}
	for _, e := range got {
		seen[e.IdempotencyKey] = true
	}
	if len(seen) != journals*writers*each {
		t.Errorf("%d distinct keys, want %d", len(seen), journals*writers*each)
	}
}

// A bad line, wherever it is, costs that line and no other: it is skipped
// and named, and the entries of every other line are read (issue 24).
func TestReadJournal(t *testing.T) {
	line := func(k, state string) string {
		return fmt.Sprintf(`{"ts":"2025-03-14T15:09:26Z","run_id":"r","tool":"pay","url":"http://u","idempotency_key":%q,"args_sha256":"","state":%q}`+"\n", k, state)
	}
	const torn = ":2: not a journal entry: cut short: the last line has no newline (its write was interrupted, or is still going on)"
	cases := []struct {
		name     string
		content  string
		wantKeys []cancel.Key
		wantLine int // a *LineError naming this line; 0 for none
		wantErr  string
	}{
		{name: "an empty file has no entries", content: ""},
		{name: "a torn last line is skipped and named", content: line("gp_a", "open") + `{"ts":"2025-03-14T15:09:26Z","run_id":"r","to`, wantKeys: []cancel.Key{"gp_a"}, wantLine: 2, wantErr: torn},
		{name: "a whole entry without its newline is still torn", content: line("gp_a", "open") + strings.TrimSuffix(line("gp_b", "open"), "\n"), wantKeys: []cancel.Key{"gp_a"}, wantLine: 2, wantErr: torn},
		{name: "empty lines are skipped silently", content: "\n" + line("gp_a", "open") + "\n", wantKeys: []cancel.Key{"gp_a"}},
		{name: "a bad middle line is skipped, naming the line, and the lines after it read", content: line("gp_a", "open") + "not json\n" + line("gp_b", "open"), wantKeys: []cancel.Key{"gp_a", "gp_b"}, wantLine: 2, wantErr: ":2: not a journal entry: invalid character 'o' in literal null"},
		{name: "a bad whole last line is skipped", content: line("gp_a", "open") + "{\n", wantKeys: []cancel.Key{"gp_a"}, wantLine: 2, wantErr: ":2: not a journal entry: unexpected end of JSON input"},
		{name: "a line without a key is skipped", content: line("", "open") + line("gp_a", "open"), wantKeys: []cancel.Key{"gp_a"}, wantLine: 1, wantErr: ":1: not a journal entry: no idempotency_key"},
		{name: "a line without a state is skipped", content: line("gp_a", ""), wantLine: 1, wantErr: ":1: not a journal entry: no state"},
		{name: "a line that is not an object is skipped", content: "[1,2]\n", wantLine: 1, wantErr: "cannot unmarshal array"},
		{name: "an overlong line is skipped, and the next read", content: line("gp_a", "open") + strings.Repeat("x", cancel.MaxLine+1) + "\n" + line("gp_b", "open"), wantKeys: []cancel.Key{"gp_a", "gp_b"}, wantLine: 2, wantErr: ":2: not a journal entry: longer than 65536 bytes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "orphans.jsonl")
			if err := os.WriteFile(path, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := cancel.ReadJournal(path)
			var keys []cancel.Key
			for _, e := range got {
				keys = append(keys, e.IdempotencyKey)
			}
			if !slices.Equal(keys, tc.wantKeys) {
				t.Errorf("keys %q, want %q", keys, tc.wantKeys)
			}
			if tc.wantLine == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			se, ok := errors.AsType[*cancel.SkippedError](err)
			if !ok || len(se.Lines) != 1 || !errors.Is(err, cancel.ErrBadJournal) {
				t.Fatalf("err = %v, want a *SkippedError of one line matching ErrBadJournal", err)
			}
			le := se.Lines[0]
			if le.Line != tc.wantLine || le.Path != path {
				t.Fatalf("skipped %s:%d, want %s:%d", le.Path, le.Line, path, tc.wantLine)
			}
			if !strings.Contains(le.Error(), tc.wantErr) || !strings.HasPrefix(le.Error(), "cancel: "+path) {
				t.Errorf("line error %q, want cancel: PATH%s", le, tc.wantErr)
			}
		})
	}
}

func TestEveryBadJournalLineIsNamedAndCounted(t *testing.T) {
	path := filepath.Join(t.TempDir(), "orphans.jsonl")
	content := "x\n" + `{"idempotency_key":"gp_a","state":"open"}` + "\n[1]\n{}\n7\n" + `{"idempotency_key":"gp_b","st`
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := cancel.ReadJournal(path)
	if len(got) != 1 || got[0].IdempotencyKey != "gp_a" {
		t.Errorf("entries %+v, want gp_a alone", got)
	}
	want := "cancel: 5 bad journal lines skipped: " + path + ":1: invalid character 'x' looking for beginning of value; " +
		path + ":3: json: cannot unmarshal array into Go value of type cancel.Entry; " + path + ":4: no idempotency_key; and 2 more"
	if err == nil || err.Error() != want {
		t.Errorf("err\n%v\nwant\n%s", err, want)
	}
}

func TestReadJournalOfAMissingFileIsNotExist(t *testing.T) {
	_, err := cancel.ReadJournal(filepath.Join(t.TempDir(), "none.jsonl"))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("err = %v, want fs.ErrNotExist", err)
	}
}

func TestAppendAfterACrashCutsTheTornLineAndKeepsTheRest(t *testing.T) {
	path := filepath.Join(t.TempDir(), "orphans.jsonl")
	appendAll(t, path, entry("gp_a", cancel.Open), entry("gp_b", cancel.Open))
	whole, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// A process died in the middle of its write.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"ts":"2025-03-14T15:09:26Z","run_id":"run-2","tool":"pa`)
	f.Close()

	appendAll(t, path, entry("gp_c", cancel.Open))
	got := readAll(t, path)
	if len(got) != 3 || got[2].IdempotencyKey != "gp_c" {
		t.Fatalf("read %+v, want gp_a, gp_b and gp_c", got)
	}
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(after, whole) {
		t.Errorf("the whole lines before the torn one changed:\n%s", after)
	}
}

func TestOpenOrphansKeepsKeysWhoseLatestStateIsOpen(t *testing.T) {
	cases := []struct {
		name    string
		entries []cancel.Entry
		want    []cancel.Key
	}{
		{name: "none", entries: nil, want: nil},
		{name: "an open entry is an orphan", entries: []cancel.Entry{entry("gp_a", "open")}, want: []cancel.Key{"gp_a"}},
		{
			name:    "a settled entry closes its key",
			entries: []cancel.Entry{entry("gp_a", "open"), entry("gp_b", "open"), entry("gp_a", "done"), entry("gp_c", "open"), entry("gp_c", "never_received")},
			want:    []cancel.Key{"gp_b"},
		},
		{
			name:    "the latest entry wins and sets the order",
			entries: []cancel.Entry{entry("gp_a", "open"), entry("gp_b", "open"), entry("gp_a", "failed"), entry("gp_a", "open")},
			want:    []cancel.Key{"gp_b", "gp_a"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []cancel.Key
			for _, e := range cancel.OpenOrphans(tc.entries) {
				if e.State != cancel.Open {
					t.Errorf("OpenOrphans returned %q in state %q", e.IdempotencyKey, e.State)
				}
				got = append(got, e.IdempotencyKey)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("OpenOrphans = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestDefaultJournalPath(t *testing.T) {
	cases := []struct {
		name, xdg, home, want string
	}{
		{"XDG_STATE_HOME wins", "/xdg/state", "/home/u", "/xdg/state/glidepath/orphans.jsonl"},
		{"without XDG_STATE_HOME, ~/.local/state", "", "/home/u", "/home/u/.local/state/glidepath/orphans.jsonl"},
		{"a relative XDG_STATE_HOME is ignored", "state", "/home/u", "/home/u/.local/state/glidepath/orphans.jsonl"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("XDG_STATE_HOME", tc.xdg)
			t.Setenv("HOME", tc.home)
			got, err := cancel.DefaultJournalPath()
			if err != nil || got != tc.want {
				t.Errorf("DefaultJournalPath() = %q, %v, want %q", got, err, tc.want)
			}
		})
	}
}

// TestHelperProcess is not a test: it is the child of TestAnOrphanReportedBeforeSIGKILLIsInTheJournal.
func TestHelperProcess(t *testing.T) {
	if os.Getenv("GLIDEPATH_HELPER") != "journal" {
		return
	}
	j, err := cancel.OpenJournal(os.Getenv("GLIDEPATH_JOURNAL"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := j.Append(entry(cancel.Key(os.Getenv("GLIDEPATH_KEY")), cancel.Open)); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println("reported")
	// Block until killed; if the parent dies instead, stdin's EOF ends us.
	bufio.NewReader(os.Stdin).ReadString(0)
	os.Exit(2)
}

func TestAnOrphanReportedBeforeSIGKILLIsInTheJournal(t *testing.T) {
	path := filepath.Join(t.TempDir(), "orphans.jsonl")
	k := cancel.NewKey()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), "GLIDEPATH_HELPER=journal", "GLIDEPATH_JOURNAL="+path, "GLIDEPATH_KEY="+string(k))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// If the child fails it exits, its stdout closes, and this read ends.
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if line != "reported\n" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("child said %q (%v), want reported; stderr:\n%s", line, err, &stderr)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child ended with %v, want killed by SIGKILL", err)
	}

	got := cancel.OpenOrphans(readAll(t, path))
	if len(got) != 1 || got[0].IdempotencyKey != k {
		t.Errorf("open orphans after the crash: %+v, want the one with key %s", got, k)
	}
}

// The commands an orphan's next step is named by: the same for the run's
// boundary, harness orphans and harness reconcile (issue 24).
func TestTheCommandsThatSettleAnOrphanNameItsJournal(t *testing.T) {
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	def := filepath.Join(state, "glidepath", "orphans.jsonl")
	cases := []struct {
		name    string
		journal string
		want    string
	}{
		{"the default journal goes unnamed", def, "harness reconcile"},
		{"no journal path is the default", "", "harness reconcile"},
		{"a journal of one's own is named", "bin/demo-orphans.jsonl", "harness reconcile --journal bin/demo-orphans.jsonl"},
		{"a path a shell would split is quoted", "/tmp/my orphans/o'k.jsonl", `harness reconcile --journal '/tmp/my orphans/o'\''k.jsonl'`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := cancel.ReconcileCommand(tc.journal); got != tc.want {
				t.Errorf("ReconcileCommand(%q) = %q, want %q", tc.journal, got, tc.want)
			}
			if got, want := cancel.SettleCommand(tc.journal, "gp_a1", cancel.Failed), tc.want+" --settle gp_a1=failed"; got != want {
				t.Errorf("SettleCommand(%q) = %q, want %q", tc.journal, got, want)
			}
		})
	}
}
