package tools

import (
	"fmt"
	"time"

	"github.com/glidepath/glidepath/landing"
)

// Usable returns specs without the tools whose ceiling is below their
// p50, as p50 says it of each from the run's estimates (the machine's
// latency profile, or the run's own calls, say they are slower than their
// ceiling lets them be): every call of one would be refused. left hears
// each tool left out, and why in the words of the result's Unavailable
// (SPEC §4), so that the result says so rather than offer a tool that
// cannot run. It is the one rule of both hosts (issue 25): a Session's
// tools at each step, and the Temporal workflow's before each model turn.
//
// specs is copied only when one is left out, and never written: with
// none left out Usable does not allocate, so that a step's cost stays
// what it was (issue 13), and a caller's own slice is kept.
func Usable(specs []Spec, p50 func(*Spec) time.Duration, left func(tool, why string)) []Spec {
	var out []Spec
	for i := range specs {
		sp := &specs[i]
		if d := p50Of(sp, p50); sp.Ceiling > 0 && d > sp.Ceiling {
			left(sp.Name, fmt.Sprintf("its ceiling %s is below its p50 %s on this machine, so every call would be refused",
				landing.Human(sp.Ceiling), landing.Human(d)))
			if out == nil {
				out = make([]Spec, i, len(specs)-1)
				copy(out, specs[:i])
			}
			continue
		}
		if out != nil {
			out = append(out, *sp)
		}
	}
	if out != nil {
		return out
	}
	return specs
}

// p50Of is sp's p50 when it has a ceiling to be above, else zero: a tool
// with no ceiling is never left out, and its estimate need not be read.
func p50Of(sp *Spec, p50 func(*Spec) time.Duration) time.Duration {
	if sp.Ceiling <= 0 {
		return 0
	}
	return p50(sp)
}
