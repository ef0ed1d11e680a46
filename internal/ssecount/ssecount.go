// Package ssecount counts the lines of a server-sent event stream as its
// bytes arrive, below a decoder: SSE decoders, the OpenAI SDK's and go-sse's
// alike, drop comment lines without a trace, and a comment is exactly what a
// keepalive is. A run counts keepalives (SPEC §6) and streamed chunks, and
// neither resets its quiet clock, so both the model client and the remote
// tools read their streams through a [Reader].
package ssecount

import (
	"bytes"
	"io"
)

// A Reader passes its source through unchanged and reports each line that
// begins with ':' (a comment: a keepalive) to Comment and each that begins
// with "data:" (a chunk) to Data; either may be nil. Lines end at '\n' or
// '\r'. Only the first five bytes of a line are looked at, so it keeps no
// buffer of its own.
type Reader struct {
	r       io.Reader
	comment func()
	data    func()

	lineStart bool // reports whether the next byte begins a line
	prefix    int  // how many bytes of "data:" the line has matched so far
}

// NewReader returns a Reader of r.
func NewReader(r io.Reader, comment, data func()) *Reader {
	return &Reader{r: r, comment: comment, data: data, lineStart: true}
}

const dataPrefix = "data:"

// Read reads from the source and counts the lines it passes.
func (c *Reader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	// Only the start of a line says anything: inside one, jump to its end
	// rather than look at every byte of a stream's content (issue 13).
	b := p[:n]
	for len(b) > 0 {
		if !c.lineStart {
			i := lineEnd(b)
			if i < 0 {
				break
			}
			b = b[i:]
		}
		c.scan(b[0])
		b = b[1:]
	}
	return n, err
}

func (c *Reader) scan(ch byte) {
	if ch == '\n' || ch == '\r' {
		c.lineStart, c.prefix = true, 0
		return
	}
	if !c.lineStart {
		return
	}
	if c.prefix == 0 && ch == ':' {
		c.lineStart = false
		if c.comment != nil {
			c.comment()
		}
		return
	}
	if ch != dataPrefix[c.prefix] {
		c.lineStart = false
		return
	}
	if c.prefix++; c.prefix == len(dataPrefix) {
		c.lineStart = false
		if c.data != nil {
			c.data()
		}
	}
}

// lineEnd returns the index of the first '\r' or '\n' in b, -1 if there is
// none. It looks for each byte alone, which the runtime does many bytes
// at a time, where bytes.IndexAny looks at every byte in turn: a stream's
// lines are its chunks, most of their bytes JSON (BenchmarkStepCPU).
func lineEnd(b []byte) int {
	i := bytes.IndexByte(b, '\n')
	head := b
	if i >= 0 {
		head = b[:i]
	}
	if j := bytes.IndexByte(head, '\r'); j >= 0 {
		return j
	}
	return i
}
