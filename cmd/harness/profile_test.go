package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/glidepath/glidepath/budget/profile"
)

// runProfile runs "harness profile args…" and returns its exit code. It
// goes through run once the dispatch table has the command; until then it
// runs the command as run would and reports its error the same way.
func runProfile(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if slices.ContainsFunc(subcommands(), func(sc subcommand) bool { return sc.name == "profile" }) {
		return run(ctx, append([]string{"profile"}, args...), strings.NewReader(""), stdout, stderr)
	}
	err := (&profileCommand{streams{stdin: strings.NewReader(""), stdout: stdout, stderr: stderr}}).Run(ctx, args)
	if err == nil {
		return exitOK
	}
	for line := range strings.Lines(err.Error()) {
		fmt.Fprint(stderr, "harness profile: ", strings.TrimSuffix(line, "\n"), "\n")
	}
	if ue, ok := errors.AsType[*usageError](err); ok {
		fmt.Fprintln(stderr, ue.hint())
		return exitUsage
	}
	return exitInternal
}

// recordProfile records obs into a profile at path, at now.
func recordProfile(t *testing.T, path string, now time.Time, obs ...profile.Observation) {
	t.Helper()
	if err := profile.Record(t.Context(), path, obs, now); err != nil {
		t.Fatal(err)
	}
}

func TestProfile(t *testing.T) {
	cases := []struct {
		name       string
		args       []string // after "profile"; {dir} is replaced by the test's folder
		setup      func(t *testing.T, dir string, now time.Time)
		xdg        bool // XDG_STATE_HOME is {dir}/xdg; otherwise unset, and HOME is {dir}/home
		wantCode   int
		wantStdout string   // exact; a usage text is compared by its first line; {dir} as in args
		wantStderr []string // substrings; nil: standard error must stay empty
	}{
		{
			name:       "a missing profile says there is none yet",
			args:       []string{"--profile", "{dir}/none.json"},
			wantStderr: []string{"harness profile: no profile at {dir}/none.json yet: no run has recorded one\n"},
		},
		{
			name:       "a missing profile in JSON has no kinds",
			args:       []string{"--profile", "{dir}/none.json", "--json"},
			wantStdout: `{"kinds":[]}` + "\n",
		},
		{
			name: "an empty profile says it has no observations",
			args: []string{"--profile", "{dir}/empty.json"},
			setup: func(t *testing.T, dir string, now time.Time) {
				if err := os.WriteFile(filepath.Join(dir, "empty.json"), nil, 0o600); err != nil {
					t.Fatal(err)
				}
			},
			wantStderr: []string{"harness profile: no observations of the last 7 days in {dir}/empty.json\n"},
		},
		{
			name: "a profile of last month has no observations of the last 7 days",
			args: []string{"--profile", "{dir}/old.json"},
			setup: func(t *testing.T, dir string, now time.Time) {
				then := now.Add(-30 * 24 * time.Hour)
				recordProfile(t, filepath.Join(dir, "old.json"), then, profile.Observation{Kind: "model", Where: simPlace, Duration: time.Second, At: then})
			},
			wantStderr: []string{"no observations of the last 7 days"},
		},
		{
			name:  "each kind is one aligned line with its count, p50, p95, longest cut and dates",
			args:  []string{"--profile", "{dir}/p.json"},
			setup: someProfile("p.json"),
			wantStdout: "" +
				"KIND              WHERE                               COUNT  P50    P95     CUT   OLDEST                NEWEST\n" +
				"agent:researcher  agent researcher of tools.yaml      1*     12.3s  12.3s   —     1999-12-31T23:00:00Z  1999-12-31T23:00:00Z\n" +
				"model             gpt-5 @ api.openai.com              1      2s     2s      —     1999-12-31T23:00:00Z  1999-12-31T23:00:00Z\n" +
				"model             sim (embedded)                      3      900ms  1.434s  1.2s  1999-12-29T00:00:00Z  1999-12-31T23:59:00Z\n" +
				"tool:search       http://127.0.0.1:8700/tools/search  2*     350µs  80ms    —     1999-12-31T22:00:00Z  1999-12-31T23:00:00Z\n" +
				"tool:slow         builtin slow                        0*     —      —       4s    1999-12-31T23:50:00Z  1999-12-31T23:50:00Z\n" +
				"\n" +
				"* fewer than 5: not used yet. A run leases a tool or sub-agent by the p50 and p95 it declares\n" +
				"  until it has 5 observations of it there, these and its own.\n",
		},
		{
			name:  "--json is the shape of SPEC §5b",
			args:  []string{"--json", "--profile", "{dir}/p.json"},
			setup: someProfile("p.json"),
			wantStdout: `{"kinds":[` +
				`{"kind":"agent:researcher","where":"agent researcher of tools.yaml","count":1,"p50_ms":12345,"p95_ms":12345,"cuts":0,"cut_ms":0,"oldest":"1999-12-31T23:00:00Z","newest":"1999-12-31T23:00:00Z"},` +
				`{"kind":"model","where":"gpt-5 @ api.openai.com","count":1,"p50_ms":2000,"p95_ms":2000,"cuts":0,"cut_ms":0,"oldest":"1999-12-31T23:00:00Z","newest":"1999-12-31T23:00:00Z"},` +
				`{"kind":"model","where":"sim (embedded)","count":3,"p50_ms":900,"p95_ms":1434,"cuts":1,"cut_ms":1200,"oldest":"1999-12-29T00:00:00Z","newest":"1999-12-31T23:59:00Z"},` +
				`{"kind":"tool:search","where":"http://127.0.0.1:8700/tools/search","count":2,"p50_ms":0,"p95_ms":80,"cuts":0,"cut_ms":0,"oldest":"1999-12-31T22:00:00Z","newest":"1999-12-31T23:00:00Z"},` +
				`{"kind":"tool:slow","where":"builtin slow","count":0,"p50_ms":0,"p95_ms":0,"cuts":1,"cut_ms":4000,"oldest":"1999-12-31T23:50:00Z","newest":"1999-12-31T23:50:00Z"}]}` + "\n",
		},
		{
			name:       "the default profile is under XDG_STATE_HOME",
			xdg:        true,
			setup:      someProfile("xdg/glidepath/profile.json"),
			args:       []string{"--json"},
			wantStdout: "{\"kinds\":[{\"kind\":\"agent:researcher\"", // checked as a prefix below
		},
		{
			name:       "without XDG_STATE_HOME the default profile is under the home folder",
			setup:      someProfile("home/.local/state/glidepath/profile.json"),
			args:       []string{"--json"},
			wantStdout: "{\"kinds\":[{\"kind\":\"agent:researcher\"",
		},
		{
			name: "a corrupt profile is an error that names the file and what is wrong",
			args: []string{"--profile", "{dir}/bad.json"},
			setup: func(t *testing.T, dir string, now time.Time) {
				if err := os.WriteFile(filepath.Join(dir, "bad.json"), []byte(`{"version":7}`), 0o600); err != nil {
					t.Fatal(err)
				}
			},
			wantCode: 1,
			wantStderr: []string{
				"harness profile: profile: {dir}/bad.json is corrupt: version 7, want 2\n",
				"harness profile: runs ignore it; the next to record one keeps it as {dir}/bad.json.corrupt and starts afresh\n",
			},
		},
		{
			name:       "an unreadable profile is an internal error",
			args:       []string{"--profile", "{dir}"},
			wantCode:   1,
			wantStderr: []string{"is a directory"},
		},
		{
			name:       "--profile off has nothing to show",
			args:       []string{"--profile", "off"},
			wantCode:   2,
			wantStderr: []string{"harness profile: --profile off: there is no profile to show\n", "try: harness profile --help\n"},
		},
		{
			name:       "an argument is bad usage",
			args:       []string{"model"},
			wantCode:   2,
			wantStderr: []string{`harness profile: unexpected argument "model"`, "try: harness profile --help"},
		},
		{
			name:       "--help prints its usage on stdout",
			args:       []string{"--help"},
			wantStdout: "usage: harness profile [--profile FILE] [--json]\n",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.xdg {
				t.Setenv("XDG_STATE_HOME", filepath.Join(dir, "xdg"))
			} else {
				t.Setenv("XDG_STATE_HOME", "")
				t.Setenv("HOME", filepath.Join(dir, "home"))
			}
			expand := func(s string) string { return strings.ReplaceAll(s, "{dir}", dir) }
			args := make([]string, len(tc.args))
			for i, a := range tc.args {
				args[i] = expand(a)
			}
			// In a bubble, the command's time.Now is synctest's fixed
			// start, so the dates it prints are exact.
			synctest.Test(t, func(t *testing.T) {
				if tc.setup != nil {
					tc.setup(t, dir, time.Now())
				}
				var stdout, stderr bytes.Buffer
				code := runProfile(t.Context(), args, &stdout, &stderr)
				if code != tc.wantCode {
					t.Errorf("exit code %d, want %d\nstderr:\n%s", code, tc.wantCode, &stderr)
				}
				got, want := stdout.String(), expand(tc.wantStdout)
				switch {
				case strings.HasPrefix(want, "usage:"):
					got, _, _ = strings.Cut(got, "\n")
					got += "\n"
				case !strings.HasSuffix(want, "\n"): // a prefix
					got = got[:min(len(got), len(want))]
				}
				if got != want {
					t.Errorf("stdout:\n%s\nwant:\n%s", &stdout, want)
				}
				for _, w := range tc.wantStderr {
					if w := expand(w); !strings.Contains(stderr.String(), w) {
						t.Errorf("stderr does not contain %q:\n%s", w, &stderr)
					}
				}
				if tc.wantStderr == nil && stderr.Len() > 0 {
					t.Errorf("unexpected stderr:\n%s", &stderr)
				}
			})
		})
	}
}

// someProfile records four kinds at five places into the profile at
// dir/name, at now: the simulated model's oldest observation three days
// old, and a cut of it, another model's beside it, one of tool:search
// eight days old, which does not count, and a tool known only by a cut.
func someProfile(name string) func(t *testing.T, dir string, now time.Time) {
	const search = "http://127.0.0.1:8700/tools/search"
	return func(t *testing.T, dir string, now time.Time) {
		recordProfile(t, filepath.Join(dir, name), now,
			profile.Observation{Kind: "model", Where: simPlace, Duration: 1434 * time.Millisecond, At: now.Add(-3 * 24 * time.Hour)},
			profile.Observation{Kind: "model", Where: simPlace, Duration: 900 * time.Millisecond, At: now.Add(-2 * time.Hour)},
			profile.Observation{Kind: "model", Where: simPlace, Duration: 812 * time.Millisecond, At: now.Add(-time.Minute)},
			profile.Observation{Kind: "model", Where: "gpt-5 @ api.openai.com", Duration: 2 * time.Second, At: now.Add(-time.Hour)},
			profile.Observation{Kind: "tool:search", Where: search, Duration: 350 * time.Microsecond, At: now.Add(-2 * time.Hour)},
			profile.Observation{Kind: "tool:search", Where: search, Duration: 80 * time.Millisecond, At: now.Add(-time.Hour)},
			profile.Observation{Kind: "tool:search", Where: search, Duration: time.Hour, At: now.Add(-8 * 24 * time.Hour)},
			profile.Observation{Kind: "agent:researcher", Where: "agent researcher of tools.yaml", Duration: 12345 * time.Millisecond, At: now.Add(-time.Hour)},
			profile.Observation{Kind: "model", Where: simPlace, Duration: 1200 * time.Millisecond, At: now.Add(-30 * time.Minute), Cut: true},
			profile.Observation{Kind: "tool:slow", Where: "builtin slow", Duration: 4 * time.Second, At: now.Add(-10 * time.Minute), Cut: true},
		)
	}
}

func TestProfileJSONDecodesAsASummary(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.json")
	now := time.Now()
	recordProfile(t, path, now, profile.Attempt("model", simPlace, now.Add(-time.Second), now))
	var stdout, stderr bytes.Buffer
	if code := runProfile(t.Context(), []string{"--profile", path, "--json"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit code %d: %s", code, &stderr)
	}
	dec := json.NewDecoder(&stdout)
	var got struct {
		Kinds []struct {
			Kind           string
			Count          int
			P50Ms          int64     `json:"p50_ms"`
			P95Ms          int64     `json:"p95_ms"`
			Oldest, Newest time.Time // RFC 3339
		}
	}
	if err := dec.Decode(&got); err != nil {
		t.Fatal(err)
	}
	if dec.More() {
		t.Error("more than one JSON value on stdout")
	}
	if len(got.Kinds) != 1 || got.Kinds[0].Kind != "model" || got.Kinds[0].Count != 1 || got.Kinds[0].P95Ms != 1000 || !got.Kinds[0].Newest.Equal(now.UTC().Round(0)) {
		t.Errorf("got %+v", got)
	}
}

func TestLatencyIsRoundedForAPerson(t *testing.T) {
	cases := []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"},
		{350*time.Microsecond + 400, "350µs"},
		{812*time.Millisecond + 400*time.Microsecond, "812ms"},
		{1434*time.Millisecond + 200*time.Microsecond, "1.434s"},
		{12345 * time.Millisecond, "12.3s"},
		{72*time.Second + 400*time.Millisecond, "1m12s"},
	}
	for _, tc := range cases {
		t.Run(tc.want, func(t *testing.T) {
			if got := latency(tc.d); got != tc.want {
				t.Errorf("latency(%v) = %q, want %q", tc.d, got, tc.want)
			}
		})
	}
}
