package durable

import (
	"testing"

	"go.temporal.io/sdk/workflow"
)

func TestABuildIsNamedByItsRulesAndADeploymentByItsQueue(t *testing.T) {
	cases := []struct {
		name       string
		buildID    string
		wantRules  workflow.Version
		wantParsed bool
	}{
		{"this build's ID reads back as its rules", BuildID(RulesVersion), RulesVersion, true},
		{"another build's ID reads back as its rules", BuildID(12), 12, true},
		{"an ID this package did not name is no rules", "v1.4.2", 0, false},
		{"an ID with the prefix and no number is no rules", "rules-", 0, false},
		{"a number without the prefix is no rules", "6", 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got, ok := rulesOf(tc.buildID); got != tc.wantRules || ok != tc.wantParsed {
				t.Errorf("rulesOf(%q) = %d, %v; want %d, %v", tc.buildID, got, ok, tc.wantRules, tc.wantParsed)
			}
		})
	}
	if got, want := BuildID(6), "rules-6"; got != want {
		t.Errorf("BuildID(6) = %q, want %q", got, want)
	}
	// A deployment's name cannot hold '.' or ':' (the server's rule).
	if got, want := DeploymentName("team.pay:eu"), "team-pay-eu"; got != want {
		t.Errorf("DeploymentName = %q, want %q", got, want)
	}
}
