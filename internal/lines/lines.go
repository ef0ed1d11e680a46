// Package lines reads the lines of a JSONL file one at a time, for the
// readers of the trace and of the orphan journal, which skip a bad line
// and read on rather than give up on the rest (issue 24), and says the
// lines they skipped ([Skipped]) in the same words for both.
package lines

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// ErrTorn is why a reader skips a last line that has no newline and does
// not parse: its write was interrupted (a process killed as it wrote it),
// or is still going on.
var ErrTorn = errors.New("cut short: the last line has no newline (its write was interrupted, or is still going on)")

// Each calls f with each line of r and its 1-based number, without its
// end of line ("\n" or "\r\n"). unended reports a line that ends the input
// without a newline: the last line, cut short if a process was killed as
// it wrote it. A line longer than max bytes (its newline not counted) is
// passed as tooLong, with nothing of it, and reading goes on after it.
// Blank lines are passed too, and counted. Each returns r's error, after
// the lines read before it.
func Each(r io.Reader, max int, f func(n int, line []byte, unended, tooLong bool)) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var line []byte
	n, long := 0, false
	for {
		chunk, err := br.ReadSlice('\n')
		if !long {
			line = append(line, chunk...)
			if len(bytes.TrimRight(line, "\r\n")) > max {
				long, line = true, line[:0]
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if len(chunk) > 0 || long || len(line) > 0 {
			n++
			unended := len(chunk) == 0 || chunk[len(chunk)-1] != '\n'
			f(n, bytes.TrimRight(line, "\r\n"), unended, long)
		}
		line, long = line[:0], false
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
