//go:build unix

package mcp_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/harness"
	"github.com/glidepath/glidepath/tools"
	"github.com/glidepath/glidepath/tools/mcp"
	"github.com/glidepath/glidepath/trace"
)

// A server's connect_timeout defaults to the smaller of 5s and a quarter
// of the run's work time (B − R), so that a mute server cannot eat a
// short run (SPEC §5b); one the entry gives wins, and a caller that knows
// no work time gets 5s.
func TestTheDefaultConnectTimeoutIsAQuarterOfTheWorkTimeAtMost5s(t *testing.T) {
	cases := []struct {
		name     string
		explicit time.Duration
		work     time.Duration
		want     time.Duration
	}{
		{"a 10s run: work 7.5s", 0, 7500 * time.Millisecond, 1875 * time.Millisecond},
		{"a 2m run: work 1m40s", 0, 100 * time.Second, 5 * time.Second},
		{"exactly 20s of work", 0, 20 * time.Second, 5 * time.Second},
		{"no work time known", 0, 0, 5 * time.Second},
		{"the entry's own, longer", 60 * time.Second, 7500 * time.Millisecond, 60 * time.Second},
		{"the entry's own, shorter", 500 * time.Millisecond, 100 * time.Second, 500 * time.Millisecond},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tools.MCPServer{Name: "s", Command: "unused", ConnectTimeout: tc.explicit}
			if got := mcp.ConnectTimeout(cfg, tc.work); got != tc.want {
				t.Errorf("ConnectTimeout(%v, work %v) = %v, want %v", tc.explicit, tc.work, got, tc.want)
			}
		})
	}
}

// setups is a sink that keeps the setup attempts a run records.
type setups struct {
	mu   sync.Mutex
	recs []trace.Record
}

func (s *setups) Record(r trace.Record) error {
	if r.Step == harness.SetupStep && r.Event == trace.AttemptEnd {
		s.mu.Lock()
		s.recs = append(s.recs, r)
		s.mu.Unlock()
	}
	return nil
}

// A stdio server that reads its input and never answers initialize, in a
// run of 10s (R 2.5s, so 7.5s of work): its setup lease is a quarter of
// the work time, 1875ms, not the 20s default that took 7449ms, the whole
// of the work time, in issue 17; and the run goes on with time to spare.
func TestAStdioServerMuteAtInitializeCostsAQuarterOfTheWorkTime(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script := filepath.Join(dir, "mute.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\n# It reads what it is sent, and its output stays open: it never answers.\ncat >/dev/null\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg, err := tools.ParseConfig("tools.json", []byte(`{"mcpServers":{"mute":{"command":`+strconv.Quote(script)+`}}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := budget.New(budget.Config{Total: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	sink := &setups{}
	s, ctx, err := harness.Start(t.Context(), b, harness.Config{Task: "t", Sinks: []trace.Sink{sink}})
	if err != nil {
		t.Fatal(err)
	}
	ts := &harness.Toolset{Config: cfg, Warn: func(err error) { t.Log(err) }}
	defer ts.Close(context.Background())
	start := time.Now()

	ts.Resolve(ctx, s)
	took := time.Since(start)
	left := b.Available()
	s.Close() // the sinks have every record once it returns

	want := 1875 * time.Millisecond
	sink.mu.Lock()
	recs := sink.recs
	sink.mu.Unlock()
	if len(recs) != 1 || recs[0].GrantedMs != want.Milliseconds() || recs[0].Outcome != trace.GaveUp {
		t.Fatalf("setup attempts %+v, want one of %v that gave up", recs, want)
	}
	// Real processes: the bound is generous, and still far below the
	// 7449ms the old default cost.
	if took < want || took > want+time.Second {
		t.Errorf("connecting took %v, want its lease of %v", took, want)
	}
	if left < 4*time.Second {
		t.Errorf("%v of work time left after the mute server, want most of it", left)
	}
}

// The first message on the wire is initialize: the go-sdk's default
// protocol would send server/discover first, which the MCP reference
// server answers with "Method not found".
func TestTheFirstMessageOnTheWireIsInitialize(t *testing.T) {
	t.Parallel()
	in := newWireTap(t)
	script, _ := referenceServer(t, "tee "+strconv.Quote(in.path)+" | NODE")
	ctx, cancel := context.WithTimeout(t.Context(), patience)
	defer cancel()
	s, _ := connectReference(t, ctx, script, nil)
	// The session is made: everything it sent before tools/list is in.
	if _, err := in.wait(ctx, method("tools/list")); err != nil {
		t.Fatal(err)
	}
	s.Close(ctx)

	msgs := in.all(func(map[string]any) bool { return true })
	if len(msgs) == 0 || msgs[0]["method"] != "initialize" {
		t.Fatalf("the wire began with %v, want initialize", msgs[:min(len(msgs), 1)])
	}
	if discover := in.all(method("server/discover")); len(discover) != 0 {
		t.Errorf("server/discover was sent: %v", discover)
	}
}
