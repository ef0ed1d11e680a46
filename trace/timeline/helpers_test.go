package timeline

import (
	"html"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/glidepath/glidepath/trace"
)

// t0 is when the runs of the tests start.
var t0 = time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC)

// runRecs builds one run's records as a run writes them, at given
// milliseconds into a budget of total.
type runRecs struct {
	id, parent string
	start      time.Time
	total      int64
	recs       []trace.Record
}

func newRun(id string, total int64) *runRecs {
	r := &runRecs{id: id, start: t0, total: total}
	return r.at(0, trace.Record{Event: trace.RunStart, TotalMs: total})
}

// child starts a sub-agent's run at ms into its parent's clock, for the
// call of key; inProcess gives its records parent_run_id.
func (p *runRecs) child(id string, ms, total int64, key string, inProcess bool) *runRecs {
	c := &runRecs{id: id, start: p.start.Add(time.Duration(ms) * time.Millisecond), total: total}
	if inProcess {
		c.parent = p.id
	}
	return c.at(0, trace.Record{Event: trace.RunStart, TotalMs: total, Key: key})
}

func (r *runRecs) at(ms int64, rec trace.Record) *runRecs {
	rec.TS = r.start.Add(time.Duration(ms) * time.Millisecond)
	rec.RunID, rec.ParentRunID, rec.Seq = r.id, r.parent, int64(len(r.recs)+1)
	rec.ElapsedMs, rec.RemainingMs = ms, r.total-ms
	if rec.Phase == "" {
		rec.Phase = "explore"
	}
	r.recs = append(r.recs, rec)
	return r
}

// attempt is one attempt from its start to its end; key "" for a model turn.
func (r *runRecs) attempt(step string, index, n int, key string, granted, from, to int64, o trace.Outcome) *runRecs {
	a := trace.Record{Step: step, StepIndex: index, Attempt: n, ResendCount: n - 1, GrantedMs: granted, Key: key}
	start, end := a, a
	start.Event = trace.AttemptStart
	end.Event, end.Outcome = trace.AttemptEnd, o
	return r.at(from, start).at(to, end)
}

func (r *runRecs) end(ms int64, cause, result string) *runRecs {
	return r.at(ms, trace.Record{Event: trace.RunEnd, TotalMs: r.total, Cause: cause, Result: result})
}

// fixture reads a trace of testdata.
func fixture(t *testing.T, name string) []trace.Record {
	t.Helper()
	f, err := os.Open("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := trace.ReadRecords(f)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// fixtures are every trace of testdata, together: real runs of make demo,
// make subagents and make mcp.
func fixtures(t *testing.T) []trace.Record {
	var all []trace.Record
	for _, name := range []string{"demo.jsonl", "demo-short.jsonl", "subagents.jsonl", "mcp.jsonl"} {
		all = append(all, fixture(t, name)...)
	}
	return all
}

// element is one tag of a page, its attributes unescaped.
type element struct {
	tag   string
	attrs map[string]string
}

var (
	tagRE  = regexp.MustCompile(`<(rect|text|body|g|line)\b([^>]*)>`)
	attrRE = regexp.MustCompile(`([a-zA-Z_:][-a-zA-Z0-9_:.]*)="([^"]*)"`)
)

// elements finds the rect, text, g, line and body tags of a page, as written or
// as a browser dumps its DOM.
func elements(page string) []element {
	var out []element
	for _, m := range tagRE.FindAllStringSubmatch(page, -1) {
		e := element{tag: m[1], attrs: map[string]string{}}
		for _, a := range attrRE.FindAllStringSubmatch(m[2], -1) {
			e.attrs[a[1]] = html.UnescapeString(a[2])
		}
		out = append(out, e)
	}
	return out
}

// attemptID names an attempt as its bar's data-* attributes do.
func attemptID(run, step string, index, attempt int, key string) string {
	return strings.Join([]string{run, step, strconv.Itoa(index), strconv.Itoa(attempt), key}, "|")
}

// wantBars is the attempts of records, one for each attempt_start and
// each attempt_end that has none, sorted.
func wantBars(records []trace.Record) []string {
	var out []string
	open := map[string]int{}
	for _, r := range records {
		id := attemptID(r.RunID, r.Step, r.StepIndex, r.Attempt, r.Key)
		switch r.Event {
		case trace.AttemptStart:
			out = append(out, id)
			open[id]++
		case trace.AttemptEnd:
			if open[id] == 0 {
				out = append(out, id)
				continue
			}
			open[id]--
		}
	}
	slices.Sort(out)
	return out
}

// gotBars is the attempts whose bars are in page, sorted.
func gotBars(page string) []string {
	var out []string
	for _, e := range elements(page) {
		if e.tag != "rect" || !strings.HasPrefix(e.attrs["class"], "bar ") {
			continue
		}
		if _, ok := e.attrs["data-attempt"]; !ok {
			continue // the legend's swatches
		}
		index, _ := strconv.Atoi(e.attrs["data-step-index"])
		n, _ := strconv.Atoi(e.attrs["data-attempt"])
		out = append(out, attemptID(e.attrs["data-run"], e.attrs["data-step"], index, n, e.attrs["data-key"]))
	}
	slices.Sort(out)
	return out
}
