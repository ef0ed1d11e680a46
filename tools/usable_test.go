package tools_test

import (
	"slices"
	"testing"
	"time"

	"github.com/glidepath/glidepath/tools"
)

func TestUsableLeavesOutAToolWhoseCeilingIsBelowItsP50AndSaysWhy(t *testing.T) {
	search := tools.Spec{Name: "search", Kind: "tool:search", Ceiling: 2 * time.Second}
	slow := tools.Spec{Name: "slow", Kind: "tool:slow", Ceiling: time.Second}
	free := tools.Spec{Name: "free", Kind: "tool:free"} // no ceiling: never left out
	p50s := map[string]time.Duration{"tool:search": time.Second, "tool:slow": 3 * time.Second, "tool:free": time.Hour}
	cases := []struct {
		name     string
		specs    []tools.Spec
		want     []string // the names offered
		wantLeft []string // what left heard
	}{
		{"a tool whose p50 is below its ceiling is offered", []tools.Spec{search, free}, []string{"search", "free"}, nil},
		{"a tool whose p50 is above its ceiling is left out, and the rest kept in order", []tools.Spec{search, slow, free},
			[]string{"search", "free"}, []string{"slow: its ceiling 1s is below its p50 3s on this machine, so every call would be refused"}},
		{"a run whose only tool is left out offers none", []tools.Spec{slow}, nil,
			[]string{"slow: its ceiling 1s is below its p50 3s on this machine, so every call would be refused"}},
		{"no tools offer none", nil, nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := slices.Clone(tc.specs)
			var left []string
			got := tools.Usable(tc.specs, func(sp *tools.Spec) time.Duration { return p50s[sp.Kind] },
				func(tool, why string) { left = append(left, tool+": "+why) })
			var names []string
			for _, sp := range got {
				names = append(names, sp.Name)
			}
			if !slices.Equal(names, tc.want) {
				t.Errorf("offered %q, want %q", names, tc.want)
			}
			if !slices.Equal(left, tc.wantLeft) {
				t.Errorf("left out %q, want %q", left, tc.wantLeft)
			}
			if !slices.EqualFunc(tc.specs, before, func(a, b tools.Spec) bool { return a.Name == b.Name }) {
				t.Errorf("the caller's specs were written: %v", tc.specs)
			}
		})
	}
}

// Usable is on every step of a run (BenchmarkStepCPU): with none left out
// it returns the caller's slice and allocates nothing.
func TestUsableAllocatesNothingWhenNoneIsLeftOut(t *testing.T) {
	specs := []tools.Spec{{Name: "a", Kind: "tool:a", Ceiling: time.Second}, {Name: "b", Kind: "tool:b"}}
	p50 := func(*tools.Spec) time.Duration { return 100 * time.Millisecond }
	left := func(tool, why string) { t.Errorf("%s left out: %s", tool, why) }
	var got []tools.Spec
	if n := testing.AllocsPerRun(100, func() { got = tools.Usable(specs, p50, left) }); n != 0 {
		t.Errorf("%v allocations, want 0", n)
	}
	if &got[0] != &specs[0] {
		t.Error("a copy was returned with none left out")
	}
}
