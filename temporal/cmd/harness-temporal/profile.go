package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/budget/profile"
	"github.com/glidepath/glidepath/model"
	"github.com/glidepath/glidepath/tools"
	"github.com/glidepath/glidepath/trace"
)

// profileRecordBound is the most `run` waits to add its run's latencies
// to the profile, other runs' records holding the lock included, as
// `harness run` does.
const profileRecordBound = time.Second

// profilePlace is where a run of c's calls each of its step kinds, for
// the latency profile (SPEC §5b): its task queue on its server. `run`
// does not know the workers' model, server or tools file, and every
// worker of a queue runs the same tools file (docs/temporal.md, One
// toolset per task queue), so a queue is one place; its kinds' history
// at another (a `harness run` on this machine, another queue) is never
// used, since a Temporal attempt's duration counts its trips through the
// server too.
//
// It places the model and the tools and sub-agents, and nothing else: a
// setup step or a manifest's fetch is placed nowhere, as in process.
func profilePlace(c conn) func(kind string) string {
	where := fmt.Sprintf("temporal %s/%s task queue %s", c.address, c.namespace, c.queue)
	return func(kind string) string {
		if kind == model.Kind || strings.HasPrefix(kind, tools.KindPrefix) || strings.HasPrefix(kind, tools.AgentKindPrefix) {
			return where
		}
		return ""
	}
}

// loadProfile reads the latency profile at path ("" for --profile off):
// the durations of this queue's kinds, for durable.Input.Profile, and the
// longest attempt of each that a quiet clock cut, for
// durable.Input.Learned (issue 27). As for `harness run`, a profile that
// cannot be read is warned about and the run starts cold.
func loadProfile(path string, where func(string) string, stderr io.Writer) (map[string][]time.Duration, map[string]time.Duration) {
	if path == "" {
		return nil, nil
	}
	p, err := profile.Load(path)
	if err != nil {
		fmt.Fprintf(stderr, "harness-temporal run: warning: %v; it is ignored, and the next record sets it aside\n", err)
	}
	now := time.Now()
	return p.Durations(where, now), p.Learned(where, now)
}

// profilePath is the --profile value, or the default profile of SPEC §5b;
// "" for off. Without a home folder to put the default in, the run goes on
// without one, and says so.
func profilePath(flagValue string, stderr io.Writer) string {
	switch flagValue {
	case "off":
		return ""
	case "":
	default:
		return flagValue
	}
	path, err := profile.DefaultPath()
	if err != nil {
		fmt.Fprintf(stderr, "harness-temporal run: warning: no latency profile: %v; name one with --profile, or say --profile off\n", err)
		return ""
	}
	return path
}

// recordProfile adds the durations of the run's attempts that finished,
// and of those a quiet clock cut (as cuts), read off its records, to the
// profile at path, as `harness run` adds
// its own: not past the run's deadline b (two fsyncs would move `run`'s
// end by the disk's latency), and waiting for other runs' records at
// most profileRecordBound.
func recordProfile(path string, where func(string) string, recs []trace.Record, b *budget.Budget, stderr io.Writer) {
	if path == "" {
		return
	}
	if b.Remaining() <= 0 {
		fmt.Fprintf(stderr, "harness-temporal run: note: the latency profile was not updated: the run's deadline had passed\n")
		return
	}
	seen := profile.NewSink(where)
	for _, r := range recs {
		seen.Record(r)
	}
	ctx, stop := budget.WithBudget(context.Background(), b)
	defer stop()
	ctx, stopBound := context.WithTimeout(ctx, profileRecordBound)
	defer stopBound()
	if err := profile.Record(ctx, path, seen.Observations(), time.Now()); err != nil {
		fmt.Fprintf(stderr, "harness-temporal run: warning: the latency profile was not updated: %v\n", err)
	}
}
