package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/glidepath/glidepath/temporal/durable"
	"go.temporal.io/sdk/client"
	"golang.org/x/term"
)

// progressEvery is how often `run --progress` asks the run for its
// status: each ask is a query a worker answers, never a history event.
const progressEvery = time.Second

// progressOn reports whether mode (auto, always, never) turns the live
// line on for w: auto only on a terminal.
func progressOn(mode string, w io.Writer) (on, tty bool) {
	tty = terminal(w)
	return mode == "always" || mode == "auto" && tty, tty
}

// terminal reports whether w is a terminal.
func terminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// watchStatus writes run id's status line to w every progressEvery, from
// its status query, until the returned stop, which waits for it: over
// itself on a terminal, a line each otherwise. A query no worker answered
// in time is skipped, not reported: the run's result says how it ended.
func watchStatus(ctx context.Context, cl client.Client, id string, w io.Writer, tty bool) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(progressEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				if tty {
					fmt.Fprint(w, "\r\033[K") // the result's lines follow on a clean line
				}
				return
			case <-t.C:
			}
			qctx, done := context.WithTimeout(ctx, progressEvery)
			v, err := cl.QueryWorkflow(qctx, id, "", durable.QueryStatus)
			var st durable.Status
			if err == nil {
				err = v.Get(&st)
			}
			done()
			switch {
			case err != nil:
			case tty:
				fmt.Fprint(w, "\r\033[K"+statusLine(live(st, time.Now())))
			default:
				fmt.Fprintln(w, statusLine(live(st, time.Now())))
			}
		}
	})
	return func() { cancel(); wg.Wait() }
}
