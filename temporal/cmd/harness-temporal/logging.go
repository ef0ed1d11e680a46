package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/glidepath/glidepath/trace"
	"github.com/glidepath/glidepath/trace/logs"
)

// logRecords writes a run's records on stderr in mode, with `harness
// run -v`'s logger (package trace/logs): console lines on a terminal,
// JSON lines on the writer under a JSON stderr. A Temporal run's records
// come back with its result, so they are logged then, all at once: a
// line's time is when it was logged, and its elapsed_ms and remaining_ms
// say when in the run it was recorded.
func logRecords(mode logs.Mode, stderr io.Writer, recs []trace.Record, secrets []string) {
	w := stderr
	if l, ok := stderr.(*logs.Lines); ok {
		w = l.Out()
	}
	sink := logs.New(logs.Logger(mode, w, terminal(stderr)), secrets...)
	for _, r := range recs {
		sink.Record(r)
	}
}

// shownError is an error `run` has already written on its stderr, in
// JSON mode as one JSON line: main does not write it again. Its exit code
// is its cause's.
type shownError struct{ err error }

func (e *shownError) Error() string { return e.err.Error() }
func (e *shownError) Unwrap() error { return e.err }

// showJSON writes err on lines as main would write it, once `run` is in
// JSON mode, where every line on stderr is one JSON object: a partial
// result's line, which main does not write, is left as it is.
func showJSON(err error, lines *logs.Lines) error {
	if _, partial := errors.AsType[*partialError](err); err == nil || partial {
		return err
	}
	fmt.Fprintf(lines, "harness-temporal: %v\n", err)
	return &shownError{err}
}
