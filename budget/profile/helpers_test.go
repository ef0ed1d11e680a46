package profile

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The tests re-execute their own binary to get writers that are separate
// processes. helperEnv selects what such a child does:
//
//	write:PATH:ID:N  wait for stdin to close, then Record N observations of
//	                 "model" and of "tool:wID", one Record each
//	crash:PATH       Record one observation and die just before the rename
const helperEnv = "GLIDEPATH_PROFILE_HELPER"

// crashCode is the exit code of a child that died in the middle of a write.
const crashCode = 3

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(helper(mode))
	}
	os.Exit(m.Run())
}

// helperNow is the now of every writer in these tests, so that what they
// record is fresh whatever the real clock says.
var helperNow = time.Date(2026, 5, 4, 9, 0, 0, 0, time.UTC)

func helper(mode string) int {
	f := strings.SplitN(mode, ":", 4)
	switch {
	case f[0] == "write" && len(f) == 4:
		id, err1 := strconv.Atoi(f[1])
		n, err2 := strconv.Atoi(f[2])
		if err1 != nil || err2 != nil {
			break
		}
		io.Copy(io.Discard, os.Stdin) // start together
		if err := writeN(f[3], id, n); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return 0
	case f[0] == "crash":
		testHookBeforeRename = func(string) { os.Exit(crashCode) }
		obs := []Observation{{Where: here, Kind: "model", Duration: time.Hour, At: helperNow}}
		err := Record(context.Background(), strings.TrimPrefix(mode, "crash:"), obs, helperNow)
		fmt.Fprintln(os.Stderr, "did not crash:", err)
		return 1
	}
	fmt.Fprintln(os.Stderr, "unknown helper mode", strconv.Quote(mode))
	return 2
}

// writerObservations are the n observations writer id records, each of
// "model" and "tool:wID": durations id·1000 + i ns, all distinct.
func writerObservations(id, n int) []Observation {
	var obs []Observation
	for i := range n {
		at := helperNow.Add(-time.Duration(i) * time.Second)
		d := time.Duration(id*1000 + i)
		obs = append(obs,
			Observation{Where: here, Kind: "model", Duration: d, At: at},
			Observation{Where: here, Kind: fmt.Sprintf("tool:w%d", id), Duration: d, At: at})
	}
	return obs
}

// writeN records writerObservations(id, n), one Record per pair, so that
// the writers' read-merge-writes interleave as much as they can.
func writeN(path string, id, n int) error {
	obs := writerObservations(id, n)
	for i := 0; i < len(obs); i += 2 {
		if err := Record(context.Background(), path, obs[i:i+2], helperNow); err != nil {
			return err
		}
	}
	return nil
}

// here is the one place the tests' observations are made at, and atHere
// places every kind there, for Seed.
const here = "sim (embedded)"

func atHere(string) string { return here }
