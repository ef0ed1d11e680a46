package main

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/model"
	"github.com/glidepath/glidepath/tools"
	"github.com/glidepath/glidepath/watchdog"
)

// quietNotes tells the user, before the run, of each step kind whose
// known p95 is above the quiet period q (issue 27): its calls are held
// for their allowance rather than cut at q, and one whose allowance
// --max-silence caps below its p95 will be cut while healthy. The kinds
// are the model's and the tools file's (tc, nil: none), as est knows
// them after the latency profile seeded it, or as their entries declare.
func quietNotes(w io.Writer, cmd string, q, maxSilence time.Duration, est *budget.Estimates, tc *tools.Config) {
	type known struct {
		kind    string
		x       watchdog.Expected
		ceiling time.Duration
	}
	var ks []known
	add := func(kind string, e tools.Entry) {
		x := est.Kind(kind).Expected()
		if x.P95 == 0 && e.P95 > 0 {
			x.P95, x.From = e.P95, watchdog.SourceDeclared
		}
		x.Stated = e.Silence
		if x.P95 > q {
			ks = append(ks, known{kind, x, e.Ceiling})
		}
	}
	add(model.Kind, tools.Entry{})
	if tc != nil {
		for _, e := range tc.Entries {
			if e.Agent == nil && !e.RemoteAgent {
				add(tools.KindPrefix+e.Name, e)
			}
		}
	}
	slices.SortFunc(ks, func(a, b known) int { return cmp.Compare(a.kind, b.kind) })
	for _, k := range ks {
		k.x.Max = maxSilence
		e, _ := k.x.Allowance(k.ceiling, 0)
		from := "its declared p95"
		switch k.x.From {
		case watchdog.SourceProfile, watchdog.SourceObserved:
			from = "the latency profile"
		}
		held := "from its start"
		if k.kind == model.Kind {
			held = "from its start once its server answers"
		}
		if e < k.x.P95 {
			fmt.Fprintf(w, "%s: warning: --quiet %s is below the p95 of %s (%s, %s), and its allowance is capped at %s (its ceiling or --max-silence): healthy calls will be cut\n",
				cmd, landing.Human(q), k.kind, landing.Human(k.x.P95), from, landing.Human(e))
			continue
		}
		fmt.Fprintf(w, "%s: note: --quiet %s is below the p95 of %s (%s, %s): its calls are held up to %s %s\n",
			cmd, landing.Human(q), k.kind, landing.Human(k.x.P95), from, landing.Human(e), held)
	}
}
