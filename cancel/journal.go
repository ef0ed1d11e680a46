package cancel

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/glidepath/glidepath/internal/lines"
)

// Entry is one line of the orphan journal (SPEC §5).
//
// An entry records how to reach the tool again from outside the run that
// made the call: the URL of a remote tool, the tools file that built the
// tool (with Tool, its entry's name) for any kind a tools file builds, and
// always the tool's step Kind, which names a kind of an embedder's own so
// that its status reader can be found ([ReconcileJournal]). Fields a line
// leaves out are empty: an entry written before they existed has only
// URL.
type Entry struct {
	TS             time.Time `json:"ts"`
	RunID          string    `json:"run_id"`
	Tool           string    `json:"tool"`
	URL            string    `json:"url"`                  // the tool server's base URL U; empty for other kinds
	ToolsFile      string    `json:"tools_file,omitempty"` // the absolute path of the tools file whose entry Tool built the tool
	Kind           string    `json:"kind,omitempty"`       // the tool's step kind: "tool:NAME", or a custom kind's own
	IdempotencyKey Key       `json:"idempotency_key"`
	ArgsSHA256     string    `json:"args_sha256"` // see [ArgsSHA256]
	State          string    `json:"state"`       // "open", later "done" | "failed" | "never_received"

	// ByHand reports, on a settled entry, that a person settled the
	// orphan (`harness reconcile --settle`), having checked by hand what
	// no program could ask its tool (issue 24), rather than the tool's
	// answer.
	ByHand bool `json:"by_hand,omitempty"`
}

// Open is the State of an entry whose outcome is unknown.
const Open = "open"

// ReconcileCommand is the harness command that asks the tools of the open
// orphans of the journal at path again: "harness reconcile", with
// "--journal path" unless path is the default journal. A run's boundary,
// `harness orphans` and `harness reconcile` all name an orphan's next step
// with it, or with [SettleCommand], so that they name the same one
// (issue 24).
func ReconcileCommand(path string) string {
	if def, err := DefaultJournalPath(); err == nil && path == def || path == "" {
		return "harness reconcile"
	}
	return "harness reconcile --journal " + shellQuote(path)
}

// SettleCommand is the harness command with which a person records that
// the orphan key of the journal at path settled in state, having checked
// by hand: for an orphan whose tool no program can ask, such as a builtin
// that lived inside the run's process or an MCP server's tool (MCP has no
// status to ask).
func SettleCommand(path string, key Key, state State) string {
	return ReconcileCommand(path) + " --settle " + shellQuote(string(key)+"="+string(state))
}

// shellQuote quotes s for a POSIX shell, when it needs it, so that a
// command with a path in it can be pasted as it is printed.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+@%", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// MaxLine bounds a journal line, newline included. [Journal.Append] refuses
// an entry that would not fit, so that every line it writes can be read.
const MaxLine = 64 << 10

// DefaultJournalPath returns where the orphan journal lives unless told
// otherwise: $XDG_STATE_HOME/glidepath/orphans.jsonl, or, when
// XDG_STATE_HOME is unset or not absolute (the XDG spec says to ignore a
// relative one), ~/.local/state/glidepath/orphans.jsonl.
func DefaultJournalPath() (string, error) {
	if dir := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(dir) {
		return filepath.Join(dir, "glidepath", "orphans.jsonl"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("cancel: no default journal path: %w", err)
	}
	return filepath.Join(home, ".local", "state", "glidepath", "orphans.jsonl"), nil
}

// A Journal is the durable, append-only orphan journal: a JSONL file to
// which each [Journal.Append] adds one line and fsyncs it before returning.
// It is safe for concurrent use, and several processes may append to one
// file at once. Make one with [OpenJournal]; the zero Journal has no file
// and its methods return an error.
type Journal struct {
	path string
	// lock is held while a line is written and synced, and guards f and
	// closed. A channel rather than a mutex, so that a goroutine waiting
	// for it is durably blocked in a synctest bubble.
	lock   chan struct{}
	f      *os.File
	closed bool // reports whether Close was called
}

// OpenJournal opens the journal at path for appending, creating its
// parent directories (0700) and the file (0600) if needed: orphans name
// tools and runs, which are nobody else's business on a shared machine.
func OpenJournal(path string) (*Journal, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("cancel: open journal: %w", err)
	}
	// O_RDWR rather than O_WRONLY: Append reads the tail to repair a torn
	// line. O_APPEND makes every write land at the end, whoever else
	// appends.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("cancel: open journal: %w", err)
	}
	// A new file's name lives in its directory: sync that too, or a crash
	// could lose the file with every orphan fsync'd into it.
	if err := syncDir(dir); err != nil {
		f.Close()
		return nil, fmt.Errorf("cancel: open journal: %w", err)
	}
	j := &Journal{path: path, lock: make(chan struct{}, 1), f: f}
	return j, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// Path returns the journal's file name.
func (j *Journal) Path() string { return j.path }

// Append writes e as one line and fsyncs the file before it returns: once
// it has returned nil, the entry survives a crash of the process or the
// machine, so the run may report the orphan. A zero TS is set to now, in
// UTC; e must have an IdempotencyKey and a State.
//
// A process that crashed in the middle of an Append may have left a torn
// line, with no newline, at the end of the file. Append cuts it before
// writing, under an advisory lock (flock) that every Append holds across
// processes, so that its own line starts clean: that Append never
// returned, so nothing relied on its entry. Whole lines are never changed.
func (j *Journal) Append(e Entry) error {
	switch {
	case e.IdempotencyKey == "":
		return errors.New("cancel: journal entry without idempotency_key")
	case e.State == "":
		return errors.New("cancel: journal entry without state")
	}
	if e.TS.IsZero() {
		e.TS = time.Now().UTC()
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // URLs with & stay readable
	if err := enc.Encode(e); err != nil {
		return fmt.Errorf("cancel: journal entry: %w", err)
	}
	if buf.Len() > MaxLine {
		return fmt.Errorf("cancel: journal entry of %d bytes, over %d", buf.Len(), MaxLine)
	}

	if j.lock == nil {
		return errNotOpened
	}
	j.lock <- struct{}{}
	defer func() { <-j.lock }()
	if j.closed {
		return fmt.Errorf("cancel: journal %s: %w", j.path, os.ErrClosed)
	}
	if err := lockFile(j.f); err != nil {
		return fmt.Errorf("cancel: journal %s: lock: %w", j.path, err)
	}
	defer unlockFile(j.f)
	if err := cutTornTail(j.f); err != nil {
		return fmt.Errorf("cancel: journal %s: %w", j.path, err)
	}
	if _, err := j.f.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("cancel: journal %s: %w", j.path, err)
	}
	if err := j.f.Sync(); err != nil {
		return fmt.Errorf("cancel: journal %s: sync: %w", j.path, err)
	}
	return nil
}

var errNotOpened = errors.New("cancel: journal not made by OpenJournal")

// cutTornTail truncates f after its last newline, if anything follows it.
func cutTornTail(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	size := fi.Size()
	if size == 0 {
		return nil
	}
	var last [1]byte
	if _, err := f.ReadAt(last[:], size-1); err != nil {
		return err
	}
	if last[0] == '\n' {
		return nil
	}
	// A torn line is a prefix of one Append's write, so at most MaxLine
	// bytes; the newline before it is within that distance.
	start := max(size-MaxLine, 0)
	tail := make([]byte, size-start)
	if _, err := f.ReadAt(tail, start); err != nil && err != io.EOF {
		return err
	}
	cut := start + int64(bytes.LastIndexByte(tail, '\n')+1)
	if cut == start && start > 0 {
		return fmt.Errorf("last line longer than %d bytes, not a torn entry", MaxLine)
	}
	return f.Truncate(cut)
}

// Close closes the journal's file; every entry appended is already on
// disk. Append and Close after Close return an error matching
// [os.ErrClosed].
func (j *Journal) Close() error {
	if j.lock == nil {
		return errNotOpened
	}
	j.lock <- struct{}{}
	defer func() { <-j.lock }()
	if j.closed {
		return fmt.Errorf("cancel: journal %s: %w", j.path, os.ErrClosed)
	}
	j.closed = true
	return j.f.Close()
}

// ReadJournal returns every entry of the journal at path, in file order.
// A line that is not an entry with an idempotency_key and a state is
// skipped, and the read goes on: one bad line must not hide the orphans
// of every other (issue 24). So is a last line with no newline, an Append
// that a crash cut short (or one still being written): only whole lines
// count. The entries returned are those of every other line, and the
// error is a [*SkippedError] naming each line skipped and why. Empty lines
// are skipped silently. A missing file is an error matching
// [io/fs.ErrNotExist]; an error reading the file ends the read, with the
// entries read before it.
func ReadJournal(path string) ([]Entry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cancel: read journal: %w", err)
	}
	defer f.Close()
	var entries []Entry
	var bad []*LineError
	err = lines.Each(f, MaxLine-1, func(n int, line []byte, unended, tooLong bool) {
		var why error
		switch {
		case tooLong:
			why = fmt.Errorf("longer than %d bytes", MaxLine)
		case unended:
			why = lines.ErrTorn
		case len(bytes.TrimSpace(line)) == 0:
			return
		default:
			var e Entry
			switch err := json.Unmarshal(line, &e); {
			case err != nil:
				why = err
			case e.IdempotencyKey == "":
				why = errors.New("no idempotency_key")
			case e.State == "":
				why = errors.New("no state")
			default:
				entries = append(entries, e)
				return
			}
		}
		bad = append(bad, &LineError{Path: path, Line: n, Err: why})
	})
	if err != nil {
		return entries, fmt.Errorf("cancel: read journal: %w", err)
	}
	if len(bad) > 0 {
		return entries, &SkippedError{Lines: bad}
	}
	return entries, nil
}

// OpenOrphans returns, in journal order, the latest entry of each key
// whose state is [Open]: an orphan stays open until reconcile appends a
// settled entry for its key.
func OpenOrphans(entries []Entry) []Entry {
	latest := make(map[Key]int, len(entries))
	for i, e := range entries {
		latest[e.IdempotencyKey] = i
	}
	var open []Entry
	for i, e := range entries {
		if latest[e.IdempotencyKey] == i && e.State == Open {
			open = append(open, e)
		}
	}
	return open
}
