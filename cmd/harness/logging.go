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
	f, ok := fileOf(w)
	return ok && term.IsTerminal(int(f.Fd()))
}

// fileOf returns the file under w: w itself, or the file a [redacting]
// writes to, whose terminal the live line and the colours are for.
func fileOf(w io.Writer) (*os.File, bool) {
	switch w := w.(type) {
	case *os.File:
		return w, true
	case *redacting:
		return fileOf(w.w)
	}
	return nil, false
}

// redacting is stderr in text mode: each write, a warning, a note, the
// summary, an error, a frame of the live line, is scrubbed of secrets
// before it is shown, as the trace and the logs are (issue 24). A write is
// one line or one frame, so a secret is never split between two.
type redacting struct {
	w       io.Writer
	secrets []string
}

func (r *redacting) Write(p []byte) (int, error) {
	if _, err := io.WriteString(r.w, redact.Secrets(string(p), r.secrets...)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// maxServerLine bounds what [serverLines] holds of a line without its
// newline.
const maxServerLine = 64 << 10

// serverLines is where an MCP stdio server's standard error goes: cut
// into lines, each scrubbed of secrets and written whole to w, the run's
// stderr (with --log-format json, one JSON object a line; issue 24). A
// server writes through a pipe in pieces that need not end at a line, so
// a partial line waits for its newline, or for Close.
type serverLines struct {
	mu      sync.Mutex
	w       io.Writer
	buf     bytes.Buffer
	secrets []string
}

func (s *serverLines) Write(p []byte) (int, error) {
	s.mu.Lock()
	s.buf.Write(p)
	var lines []string
	for {
		i := bytes.IndexByte(s.buf.Bytes(), '\n')
		if i < 0 && s.buf.Len() > maxServerLine {
			i = s.buf.Len() - 1 // a line without end is shown as it is so far, not held without bound
		}
		if i < 0 {
			break
		}
		lines = append(lines, string(s.buf.Next(i+1)))
	}
	s.mu.Unlock()
	// Written once s.mu is let go: the live line's lock is not waited for
	// under it. Each server's lines come from one pipe, one write after
	// another, so they keep their order.
	for _, line := range lines {
		s.emit(line)
	}
	return len(p), nil
}

// emit writes one line, scrubbed, with its newline.
func (s *serverLines) emit(line string) {
	line = strings.TrimRight(line, "\r\n")
	if strings.TrimSpace(line) != "" {
		io.WriteString(s.w, redact.Secrets(line, s.secrets...)+"\n")
	}
}

// Close writes what is left of a last line without its newline. The
// servers are stopped before it is called.
func (s *serverLines) Close() error {
	s.mu.Lock()
	rest := s.buf.String()
	s.buf.Reset()
	s.mu.Unlock()
	s.emit(rest)
	return nil
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
