package landing_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/landing"
)

// The report tells the time that passed, even past the budget (SPEC §3):
// spent_ms above total_ms for a late run, remaining_ms never below 0.
func TestABudgetReportedAfterItsDeadlineSaysSpentAboveTotal(t *testing.T) {
	cases := []struct {
		name             string
		after            time.Duration
		spent, remaining int64
	}{
		{"inside the budget", 1500 * time.Millisecond, 1500, 500},
		{"at the deadline", 2 * time.Second, 2000, 0},
		{"a stopped process resumed late", 14400 * time.Millisecond, 14400, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b, err := budget.New(budget.Config{Total: 2 * time.Second})
				if err != nil {
					t.Fatal(err)
				}
				time.Sleep(tc.after)
				r := landing.ReportOf(b, time.Now())
				if r.TotalMs != 2000 || r.SpentMs != tc.spent || r.RemainingMs != tc.remaining {
					t.Errorf("report %+v, want total 2000, spent %d, remaining %d", r, tc.spent, tc.remaining)
				}
				data, err := json.Marshal(landing.Result{Budget: r})
				if err != nil {
					t.Fatal(err)
				}
				if want := `"spent_ms":` + strconv.FormatInt(tc.spent, 10); !strings.Contains(string(data), want) {
					t.Errorf("--json %s, want %s", data, want)
				}
			})
		})
	}
}
