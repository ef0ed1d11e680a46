package profile_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/budget/profile"
)

// One run records what it observed; the next loads the profile and starts
// from those estimates instead of cold.
func Example() {
	dir, err := os.MkdirTemp("", "profile")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "glidepath", "profile.json")
	now := time.Date(2026, 5, 4, 9, 0, 0, 0, time.UTC)

	// The first run, at its end.
	var obs []profile.Observation
	for i, d := range []time.Duration{800 * time.Millisecond, 900 * time.Millisecond, 1200 * time.Millisecond, 4 * time.Second} {
		end := now.Add(time.Duration(i) * 10 * time.Second)
		obs = append(obs, profile.Attempt("model", "gpt-5 @ api.openai.com", end.Add(-d), end))
	}
	obs = append(obs, profile.Observation{Kind: "tool:search", Where: "http://127.0.0.1:8700/tools/search", Duration: 120 * time.Millisecond, At: now})
	if err := profile.Record(context.Background(), path, obs, now); err != nil {
		fmt.Println(err)
		return
	}

	// The next run, at its start: it calls the same model, and its
	// search tool at another server, whose history is not this one's.
	p, err := profile.Load(path)
	if err != nil {
		fmt.Println(err) // reported, never fatal: p is then empty
	}
	est := budget.NewEstimates()
	where := map[string]string{"model": "gpt-5 @ api.openai.com", "tool:search": "http://search.internal:8700/tools/search"}
	p.Seed(est, func(kind string) string { return where[kind] }, now.Add(time.Hour))
	model, search := est.Kind("model"), est.Kind("tool:search")
	fmt.Println("model p50", model.P50(), "p95", model.P95())
	fmt.Println("search p50", search.P50())
	for _, k := range p.Summary(now.Add(time.Hour)).Kinds {
		fmt.Println(k.Kind, k.Where, k.Count, k.P50, k.P95, k.Oldest.Format(time.RFC3339), k.Newest.Format(time.RFC3339))
	}
	// A week later, the profile says nothing.
	fmt.Println("kinds after 7 days:", len(p.Summary(now.Add(profile.MaxAge+time.Minute)).Kinds))
	// Output:
	// model p50 900ms p95 4s
	// search p50 0s
	// model gpt-5 @ api.openai.com 4 900ms 4s 2026-05-04T09:00:00Z 2026-05-04T09:00:30Z
	// tool:search http://127.0.0.1:8700/tools/search 1 120ms 120ms 2026-05-04T09:00:00Z 2026-05-04T09:00:00Z
	// kinds after 7 days: 0
}

// The file keeps one line per observation, places in order of kind and
// place, each one's observations oldest first.
func ExampleRecord() {
	dir, err := os.MkdirTemp("", "profile")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "profile.json")
	now := time.Date(2026, 5, 4, 9, 12, 47, 0, time.UTC)
	obs := []profile.Observation{
		{Kind: "tool:search", Where: "builtin search", Duration: 120 * time.Millisecond, At: now.Add(-1100 * time.Millisecond)},
		{Kind: "model", Where: "sim (embedded)", Duration: 1430 * time.Millisecond, At: now},
		{Kind: "model", Where: "sim (embedded)", Duration: 812 * time.Millisecond, At: now.Add(-2500 * time.Millisecond)},
	}
	if err := profile.Record(context.Background(), path, obs, now); err != nil {
		fmt.Println(err)
		return
	}
	data, err := os.ReadFile(path)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(string(data))
	// Output:
	// {"version":2,"places":[
	// {"kind":"model","where":"sim (embedded)","obs":[
	// {"at":"2026-05-04T09:12:44.5Z","ns":812000000},
	// {"at":"2026-05-04T09:12:47Z","ns":1430000000}]},
	// {"kind":"tool:search","where":"builtin search","obs":[
	// {"at":"2026-05-04T09:12:45.9Z","ns":120000000}]}
	// ]}
}

// The summary's JSON form is the one "harness profile --json" prints.
func ExampleSummary() {
	now := time.Date(2026, 5, 4, 9, 0, 0, 0, time.UTC)
	s := profile.Summary{Kinds: []profile.KindSummary{{
		Kind: "model", Where: "sim (embedded)", Count: 4, P50: 900 * time.Millisecond, P95: 4 * time.Second,
		Cuts: 1, Cut: 10 * time.Second, Oldest: now, Newest: now.Add(30 * time.Second),
	}}}
	out, _ := json.Marshal(s)
	fmt.Println(string(out))
	// Output:
	// {"kinds":[{"kind":"model","where":"sim (embedded)","count":4,"p50_ms":900,"p95_ms":4000,"cuts":1,"cut_ms":10000,"oldest":"2026-05-04T09:00:00Z","newest":"2026-05-04T09:00:30Z"}]}
}

// A corrupt profile is reported, with the file and what is wrong, and the
// run goes on cold.
func ExampleLoad() {
	dir, err := os.MkdirTemp("", "profile")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "profile.json")
	if err := os.WriteFile(path, []byte(`{"version":1,"kinds":{"model":[{"ns":5}]}}`), 0o600); err != nil {
		fmt.Println(err)
		return
	}
	p, err := profile.Load(path)
	fmt.Println(err != nil, len(p.Summary(time.Now()).Kinds))
	if ce, ok := errors.AsType[*profile.CorruptError](err); ok {
		fmt.Println(filepath.Base(ce.Path)+":", ce.Err)
	}
	// Output:
	// true 0
	// profile.json: "model" observation 1: no "at"
}
