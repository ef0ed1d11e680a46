package main

import (
	"bytes"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/glidepath/glidepath/internal/redact"
	"golang.org/x/term"
)

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
