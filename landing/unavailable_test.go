package landing_test

import (
	"slices"
	"testing"

	"github.com/glidepath/glidepath/landing"
)

func TestAToolIsListedUnavailableOnceWithTheFirstReason(t *testing.T) {
	var list []landing.Unavailable
	list = landing.MarkUnavailable(list, "fetch", "its tool server is down")
	list = landing.MarkUnavailable(list, "slow", "its ceiling 1s is below its p50 3s on this machine, so every call would be refused")
	list = landing.MarkUnavailable(list, "fetch", "said twice")
	want := []landing.Unavailable{{Tool: "fetch", Why: "its tool server is down"},
		{Tool: "slow", Why: "its ceiling 1s is below its p50 3s on this machine, so every call would be refused"}}
	if !slices.Equal(list, want) {
		t.Errorf("unavailable %+v, want %+v", list, want)
	}
}
