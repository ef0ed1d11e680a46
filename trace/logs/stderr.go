package logs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/glidepath/glidepath/internal/redact"
	"github.com/rs/zerolog"
)

// Mode is how a command that runs a run writes to its stderr (SPEC §4):
// plain text, as without -v; console lines beside the text, -v on a
// terminal; or JSON, -v elsewhere or --log-format json, where every line
// on stderr is one JSON object. `harness run` and `harness-temporal run`
// decide it alike.
type Mode int

const (
	Text Mode = iota
	Console
	JSON
)

// ErrFormat is matched by the error of a --log-format that is none of
// auto, console and json.
var ErrFormat = errors.New("want auto, console or json")

// ModeOf decides the mode from -v, --log-format (auto, console or json)
// and whether stderr is a terminal.
func ModeOf(verbose bool, format string, terminal bool) (Mode, error) {
	switch {
	case format != "auto" && format != "console" && format != "json":
		return Text, fmt.Errorf("--log-format %q: %w", format, ErrFormat)
	case format == "json":
		return JSON, nil
	case format == "console" && verbose:
		return Console, nil
	case !verbose:
		return Text, nil
	case terminal:
		return Console, nil
	}
	return JSON, nil
}

// Logger returns the logger of a -v run in mode m: console lines on w,
// coloured when color says the terminal shows it, or JSON lines on w.
func Logger(m Mode, w io.Writer, color bool) zerolog.Logger {
	if m == Console {
		return zerolog.New(zerolog.ConsoleWriter{Out: w, TimeFormat: time.TimeOnly, NoColor: !color}).With().Timestamp().Logger()
	}
	return zerolog.New(w).With().Timestamp().Logger()
}

// Lines is stderr in JSON mode: each line written to it, a warning, a
// note, the summary, an error, becomes one JSON log line, its level read
// off its words, its text scrubbed of secrets. A partial line waits for
// its newline. It is safe for concurrent use.
type Lines struct {
	mu      sync.Mutex // guards buf and secrets
	w       io.Writer
	log     zerolog.Logger
	buf     bytes.Buffer
	secrets []string
}

// NewLines returns the Lines of w, scrubbing secrets.
func NewLines(w io.Writer, secrets ...string) *Lines {
	return &Lines{w: w, log: zerolog.New(w).With().Timestamp().Logger(), secrets: secrets}
}

// SetSecrets replaces the values no line may carry, once more are known
// (a tools file's keys).
func (j *Lines) SetSecrets(secrets []string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.secrets = secrets
}

// Out is the writer under the lines, where a run's own JSON log lines go
// as they are.
func (j *Lines) Out() io.Writer { return j.w }

func (j *Lines) Write(p []byte) (int, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.buf.Write(p)
	for {
		line, err := j.buf.ReadString('\n')
		if err != nil { // no newline yet: keep the rest
			j.buf.Reset()
			j.buf.WriteString(line)
			return len(p), nil
		}
		line = strings.TrimRight(line, "\r\n")
		if strings.TrimSpace(line) == "" {
			continue
		}
		level := zerolog.InfoLevel
		switch {
		case strings.Contains(line, "warning:"):
			level = zerolog.WarnLevel
		case strings.HasPrefix(line, "harness") && !strings.Contains(line, "note:"),
			strings.HasPrefix(line, "try: "):
			level = zerolog.ErrorLevel
		}
		j.log.WithLevel(level).Msg(redact.Secrets(line, j.secrets...))
	}
}
