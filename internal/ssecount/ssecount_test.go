package ssecount_test

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/glidepath/glidepath/internal/ssecount"
)

func TestCommentsAndDataLinesAreCountedAsTheyPass(t *testing.T) {
	cases := []struct {
		name           string
		stream         string
		comments, data int
	}{
		{"a keepalive-only stream", ": ping\n\n: ping\n\n", 2, 0},
		{"chunks and a keepalive", "data: {\"a\":1}\n\n: ka\ndata: [DONE]\n\n", 1, 2},
		{"event and id lines are neither", "event: progress\nid: 3\ndata: {}\n\n", 0, 1},
		{"a colon inside a line is not a comment", "data: a:b\nretry: 10\n", 0, 1},
		{"carriage returns end lines", ":a\r:b\r\ndata:x\r", 2, 1},
		{"whichever line end comes first ends the line", "xx\n:a\rxx\r:b\nxx\r\ndata:x\n", 2, 1},
		{"a line that only starts like data is not data", "dat\ndatum: 1\ndata\n", 0, 0},
		{"an empty stream", "", 0, 0},
	}
	// One byte at a time, so that every line's prefix is split across
	// reads, and the whole stream in one read, so that lines are found
	// inside a read.
	reads := map[string]func(io.Reader) io.Reader{
		"one byte at a time": iotest.OneByteReader,
		"in one read":        func(r io.Reader) io.Reader { return r },
	}
	for _, tc := range cases {
		for how, wrap := range reads {
			t.Run(tc.name+"/"+how, func(t *testing.T) {
				var comments, data int
				r := ssecount.NewReader(wrap(strings.NewReader(tc.stream)), func() { comments++ }, func() { data++ })
				out, err := io.ReadAll(r)
				if err != nil {
					t.Fatal(err)
				}
				if string(out) != tc.stream {
					t.Errorf("passed %q, want the stream unchanged", out)
				}
				if comments != tc.comments || data != tc.data {
					t.Errorf("%d comments and %d data lines, want %d and %d", comments, data, tc.comments, tc.data)
				}
			})
		}
	}
}

func TestAReaderWithoutCallbacksOnlyPassesTheStream(t *testing.T) {
	in := []byte(": x\ndata: y\n")
	out, err := io.ReadAll(ssecount.NewReader(bytes.NewReader(in), nil, nil))
	if err != nil || !bytes.Equal(out, in) {
		t.Errorf("read %q, %v; want %q", out, err, in)
	}
}
