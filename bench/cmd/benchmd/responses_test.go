package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/glidepath/glidepath/bench/battery"
)

// -scenarios runs the battery scenarios whose names match, and no other.
func TestScenariosFilterTheBattery(t *testing.T) {
	r := &report{match: regexp.MustCompile(`^responses-hang`)}
	var names []string
	for _, sc := range r.scenarios() {
		names = append(names, sc.Name)
	}
	if got := strings.Join(names, " "); got != "responses-hang-headers responses-hang-after-headers" {
		t.Errorf("scenarios %q", got)
	}
	if all := (&report{}).scenarios(); len(all) != len(battery.Scenarios()) {
		t.Errorf("%d scenarios with no filter, want all %d", len(all), len(battery.Scenarios()))
	}
}

// Each Responses API scenario is put beside its Chat twin: the row is met
// when every run was labeled and each pair ended alike; a pair that did
// not is named; a twin the report did not run is shown as "—", not judged.
func TestTheResponsesRowsSitBesideTheirChatTwins(t *testing.T) {
	partial := battery.Result{Runs: 10, Labeled: 10, Partial: 10}
	complete := battery.Result{Runs: 10, Labeled: 10, Complete: 10}
	for _, tc := range []struct {
		name  string
		cells map[string]battery.Result
		met   bool
		says  string
	}{
		{"a fault that lands as on Chat", map[string]battery.Result{
			"responses-hang-after-headers": partial, "model-hang-after-headers": partial}, true, "1 of 1 land as their Chat twin"},
		{"a fault that lands otherwise", map[string]battery.Result{
			"responses-hang-after-headers": complete, "model-hang-after-headers": partial}, false,
			"responses-hang-after-headers 10 / 0 / 0 against model-hang-after-headers 0 / 10 / 0"},
		{"a twin that did not run", map[string]battery.Result{"responses-hang-after-headers": partial}, true, "10 of 10 runs labeled over 1 scenarios"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc, _ := battery.Lookup("responses-hang-after-headers")
			r := &report{}
			responsesBeside(r, []battery.Scenario{sc}, tc.cells)
			if len(r.spec) != 1 || r.spec[0].met != tc.met || !strings.Contains(r.spec[0].glidepath, tc.says) {
				t.Fatalf("rows %+v; want one, met %v, saying %q", r.spec, tc.met, tc.says)
			}
			if len(r.parts) != 1 || !strings.Contains(r.parts[0].body, "| responses-hang-after-headers | model-hang-after-headers |") {
				t.Errorf("table:\n%s", r.parts[0].body)
			}
		})
	}
}
