package main

import (
	"bytes"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/glidepath/glidepath/internal/redact"
	"github.com/rs/zerolog"
	"golang.org/x/term"
)

// logMode is how harness run writes to stderr (SPEC §4): plain text, as
// without -v; console lines from zerolog beside the text, -v on a
// terminal; or JSON, -v elsewhere or --log-format json, where every line
// on stderr is one JSON object.
type logMode int

const (
	logText logMode = iota
	logConsole
	logJSON
)

// logModeOf decides the mode from -v, --log-format and whether w is a
// terminal.
func logModeOf(verbose bool, format string, w io.Writer) logMode {
	switch {
	case format == "json":
		return logJSON
	case format == "console" && verbose:
		return logConsole
	case !verbose:
		return logText
	case isTerminal(w):
		return logConsole
	}
	return logJSON
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// jsonLines is stderr in JSON mode: each line written to it, a warning, a
// note, the summary, an error, becomes one JSON log line, its level read
// off its words, its text scrubbed of secrets. A partial line waits for
// its newline.
type jsonLines struct {
	mu      sync.Mutex
	w       io.Writer
	log     zerolog.Logger
	buf     bytes.Buffer
	secrets []string
}

func newJSONLines(w io.Writer, secrets ...string) *jsonLines {
	return &jsonLines{w: w, log: zerolog.New(w).With().Timestamp().Logger(), secrets: secrets}
}

// out is the writer under the lines, where the run's own JSON log lines
// go as they are.
func (j *jsonLines) out() io.Writer { return j.w }

func (j *jsonLines) Write(p []byte) (int, error) {
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

// logger returns the zerolog logger of a -v run: console lines on w,
// coloured when color says the terminal shows it, or JSON lines on w.
func logger(mode logMode, w io.Writer, color bool) zerolog.Logger {
	if mode == logConsole {
		return zerolog.New(zerolog.ConsoleWriter{Out: w, TimeFormat: time.TimeOnly, NoColor: !color}).With().Timestamp().Logger()
	}
	return zerolog.New(w).With().Timestamp().Logger()
}
