package main

import (
	"errors"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/model"
)

func TestMakePlanComputesTheUnbudgetedWorstCase(t *testing.T) {
	cases := []struct {
		name string
		cfg  planConfig

		wantModel     bound
		wantPerStep   bound
		wantTotal     bound
		wantRATotal   bound // with Retry-After
		wantSlowest   string
		wantUnbounded []string
		wantVerdict   string
	}{
		{
			// Everything left out: openai-go's model has no timeout.
			name:          "an empty configuration is unbounded because openai-go sets no timeout",
			cfg:           planConfig{},
			wantModel:     bound{D: 1500 * time.Millisecond, Unbounded: true},
			wantPerStep:   bound{D: 1500 * time.Millisecond, Unbounded: true},
			wantTotal:     bound{D: 50 * 1500 * time.Millisecond, Unbounded: true},
			wantRATotal:   bound{D: 50 * 4 * time.Minute, Unbounded: true},
			wantUnbounded: []string{"openai-go has no overall timeout by default"},
			wantVerdict:   "unbudgeted worst case is unbounded (openai-go has no overall timeout by default); under Glidepath the run lands by 2m0s",
		},
		{
			// The example config: the tools are bounded, the model is not.
			name: "an unset model ceiling makes the total unbounded even when every tool is bounded",
			cfg: planConfig{
				Budget: new(2 * time.Minute), Steps: new(20),
				Tools: []toolConfig{
					{Name: "search", limits: limits{Ceiling: new(30 * time.Second), Retries: new(2)}},
					{Name: "fetch", limits: limits{Ceiling: new(10 * time.Second)}},
				},
			},
			wantModel: bound{D: 1500 * time.Millisecond, Unbounded: true},
			// search: 30s × 3 + (250ms + 500ms) = 1m30.75s.
			wantPerStep:   bound{D: 1500*time.Millisecond + 90750*time.Millisecond, Unbounded: true},
			wantTotal:     bound{D: 20 * (1500*time.Millisecond + 90750*time.Millisecond), Unbounded: true},
			wantRATotal:   bound{D: 20 * (4*time.Minute + 90750*time.Millisecond), Unbounded: true},
			wantSlowest:   "search",
			wantUnbounded: []string{"openai-go has no overall timeout by default"},
		},
		{
			// model: 30s × (1+3) + (0.5s + 1s + 2s) = 123.5s
			// tool a: 5s × (1+1) + 250ms = 10.25s; tool b: 8s × 1 = 8s; a is slowest
			// per step: 123.5s + 2 × 10.25s = 144s; total: 10 × 144s = 1440s = 24m
			// Retry-After: model 30s × 4 + 3 × 2m = 480s; per step 480s + 20.5s
			// = 500.5s; total 5005s = 1h23m25s.
			name: "an all-bounded configuration sums every attempt and every longest sleep",
			cfg: planConfig{
				Budget: new(2 * time.Minute), Steps: new(10), ToolCallsPerStep: new(2),
				Model: limits{Ceiling: new(30 * time.Second), Retries: new(3)},
				Tools: []toolConfig{
					{Name: "a", limits: limits{Ceiling: new(5 * time.Second), Retries: new(1)}},
					{Name: "b", limits: limits{Ceiling: new(8 * time.Second), Retries: new(0)}},
				},
			},
			wantModel:   bound{D: 123500 * time.Millisecond},
			wantPerStep: bound{D: 144 * time.Second},
			wantTotal:   bound{D: 24 * time.Minute},
			wantRATotal: bound{D: time.Hour + 23*time.Minute + 25*time.Second},
			wantSlowest: "a",
			wantVerdict: "unbudgeted worst case is 24m0s, 12.0× the 2m0s budget; under Glidepath the run lands by 2m0s",
		},
		{
			// model: 60s × 1 = 60s; tool: 39s × 1 = 39s; 20 × 99s = 33m.
			name: "a bounded total is compared with the budget it was meant to fit",
			cfg: planConfig{
				Steps: new(20),
				Model: limits{Ceiling: new(time.Minute), Retries: new(0)},
				Tools: []toolConfig{{Name: "t", limits: limits{Ceiling: new(39 * time.Second)}}},
			},
			wantModel:   bound{D: time.Minute},
			wantPerStep: bound{D: 99 * time.Second},
			wantTotal:   bound{D: 33 * time.Minute},
			wantRATotal: bound{D: 33 * time.Minute},
			wantSlowest: "t",
			wantVerdict: "unbudgeted worst case is 33m0s, 16.5× the 2m0s budget; under Glidepath the run lands by 2m0s",
		},
		{
			// 2 × (1s × 3 + 1.5s) = 9s
			name: "a total inside the budget says so",
			cfg: planConfig{
				Budget: new(10 * time.Second), Steps: new(2),
				Model: limits{Ceiling: new(time.Second)},
			},
			wantModel:   bound{D: 4500 * time.Millisecond},
			wantPerStep: bound{D: 4500 * time.Millisecond},
			wantTotal:   bound{D: 9 * time.Second},
			wantRATotal: bound{D: 2 * (3*time.Second + 4*time.Minute)},
			wantVerdict: "unbudgeted worst case is 9s, within the 10s budget; under Glidepath the run lands by 10s",
		},
		{
			name: "a ceiling of zero is no timeout and says so",
			cfg: planConfig{
				Steps: new(1),
				Model: limits{Ceiling: new(time.Duration(0)), Retries: new(0)},
			},
			wantModel:     bound{Unbounded: true},
			wantPerStep:   bound{Unbounded: true},
			wantTotal:     bound{Unbounded: true},
			wantRATotal:   bound{Unbounded: true},
			wantUnbounded: []string{"model.ceiling is 0, which means no timeout"},
		},
		{
			// b is unbounded, so it is the slowest though a's number is larger.
			name: "a tool with no ceiling is the slowest and is named as a reason",
			cfg: planConfig{
				Steps: new(1),
				Model: limits{Ceiling: new(time.Second), Retries: new(0)},
				Tools: []toolConfig{
					{Name: "a", limits: limits{Ceiling: new(time.Hour)}},
					{Name: "b"},
				},
			},
			wantModel:     bound{D: time.Second},
			wantPerStep:   bound{D: time.Second, Unbounded: true},
			wantTotal:     bound{D: time.Second, Unbounded: true},
			wantRATotal:   bound{D: time.Second, Unbounded: true},
			wantSlowest:   "b",
			wantUnbounded: []string{"tool b has no ceiling and net/http sets no timeout"},
		},
		{
			name: "a tool never called costs nothing even without a ceiling",
			cfg: planConfig{
				Budget: new(2 * time.Second), Steps: new(3), ToolCallsPerStep: new(0),
				Model: limits{Ceiling: new(time.Second), Retries: new(0)},
				Tools: []toolConfig{{Name: "idle"}},
			},
			wantModel:   bound{D: time.Second},
			wantPerStep: bound{D: time.Second},
			wantTotal:   bound{D: 3 * time.Second},
			wantRATotal: bound{D: 3 * time.Second},
			wantSlowest: "idle",
			wantVerdict: "unbudgeted worst case is 3s, 1.5× the 2s budget; under Glidepath the run lands by 2s",
		},
		{
			name: "a total beyond what a duration holds saturates rather than wraps",
			cfg: planConfig{
				Steps: new(maxCount),
				Model: limits{Ceiling: new(time.Duration(math.MaxInt64 / 4)), Retries: new(maxCount)},
			},
			wantModel:   bound{D: math.MaxInt64},
			wantPerStep: bound{D: math.MaxInt64},
			wantTotal:   bound{D: math.MaxInt64},
			wantRATotal: bound{D: math.MaxInt64},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := makePlan(tc.cfg)
			if err != nil {
				t.Fatalf("makePlan: %v", err)
			}
			if p.Model.Worst != tc.wantModel {
				t.Errorf("model worst = %+v, want %+v", p.Model.Worst, tc.wantModel)
			}
			if p.PerStep != tc.wantPerStep {
				t.Errorf("per step = %+v, want %+v", p.PerStep, tc.wantPerStep)
			}
			if p.Total != tc.wantTotal {
				t.Errorf("total = %+v, want %+v", p.Total, tc.wantTotal)
			}
			if p.RetryAfterTotal != tc.wantRATotal {
				t.Errorf("Retry-After total = %+v, want %+v", p.RetryAfterTotal, tc.wantRATotal)
			}
			var slowest string
			if p.Slowest >= 0 {
				slowest = p.Tools[p.Slowest].Name
			}
			if slowest != tc.wantSlowest {
				t.Errorf("slowest tool = %q, want %q", slowest, tc.wantSlowest)
			}
			if !slices.Equal(p.Unbounded, tc.wantUnbounded) {
				t.Errorf("unbounded because %q, want %q", p.Unbounded, tc.wantUnbounded)
			}
			if tc.wantVerdict != "" && p.verdict() != tc.wantVerdict {
				t.Errorf("verdict:\n got %s\nwant %s", p.verdict(), tc.wantVerdict)
			}
		})
	}
}

func TestMakePlanFillsAndNamesEveryDefaultItUses(t *testing.T) {
	cases := []struct {
		name         string
		cfg          planConfig
		wantDefaults []string // "field=value"
		wantRetries  []int    // model's, then each tool's
		wantBackoff  []time.Duration
	}{
		{
			name:         "everything left out takes harness run's and openai-go's defaults",
			cfg:          planConfig{},
			wantDefaults: []string{"budget=2m0s", "steps=50", "model.ceiling=none", "model.retries=2"},
			wantRetries:  []int{2},
			wantBackoff:  []time.Duration{1500 * time.Millisecond},
		},
		{
			name: "a tool left without limits gets net/http's: no timeout, no retries",
			cfg: planConfig{
				Budget: new(time.Minute), Steps: new(5),
				Model: limits{Ceiling: new(time.Second), Retries: new(4)},
				Tools: []toolConfig{{Name: "fetch"}},
			},
			wantDefaults: []string{"tool_calls_per_step=1", "tools[0].ceiling=none", "tools[0].retries=0"},
			wantRetries:  []int{4, 0},
			// 0.5s + 1s + 2s + 4s
			wantBackoff: []time.Duration{7500 * time.Millisecond, 0},
		},
		{
			name: "retries given are used and only the ceiling is defaulted",
			cfg: planConfig{
				Budget: new(time.Minute), Steps: new(5), ToolCallsPerStep: new(1),
				Model: limits{Retries: new(0)},
				Tools: []toolConfig{{Name: "s", limits: limits{Ceiling: new(time.Second), Retries: new(3)}}},
			},
			wantDefaults: []string{"model.ceiling=none"},
			wantRetries:  []int{0, 3},
			// 250ms + 500ms + 1s
			wantBackoff: []time.Duration{0, 1750 * time.Millisecond},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := makePlan(tc.cfg)
			if err != nil {
				t.Fatalf("makePlan: %v", err)
			}
			var got []string
			for _, d := range p.Defaults {
				if d.Why == "" {
					t.Errorf("default %s has no reason", d.Field)
				}
				got = append(got, d.Field+"="+d.Value)
			}
			if !slices.Equal(got, tc.wantDefaults) {
				t.Errorf("defaults = %q, want %q", got, tc.wantDefaults)
			}
			calls := append([]callPlan{p.Model}, p.Tools...)
			for i, c := range calls {
				if c.Retries != tc.wantRetries[i] || c.Backoff != tc.wantBackoff[i] {
					t.Errorf("%s: retries %d backoff %v, want %d and %v", c.Name, c.Retries, c.Backoff, tc.wantRetries[i], tc.wantBackoff[i])
				}
			}
		})
	}
}

func TestMakePlanLeasesTheWholeRunFromTheBudget(t *testing.T) {
	cases := []struct {
		budget                time.Duration
		wantReserve, wantWork time.Duration
	}{
		{2 * time.Minute, 20 * time.Second, 100 * time.Second},
		{10 * time.Second, 2500 * time.Millisecond, 7500 * time.Millisecond},
		{10 * time.Minute, time.Minute, 9 * time.Minute},
	}
	for _, tc := range cases {
		t.Run(tc.budget.String(), func(t *testing.T) {
			p, err := makePlan(planConfig{Budget: new(tc.budget)})
			if err != nil {
				t.Fatal(err)
			}
			if p.Reserve != tc.wantReserve || p.Work() != tc.wantWork || p.Floor != budget.DefaultFloor {
				t.Errorf("reserve %v work %v floor %v, want %v, %v, %v", p.Reserve, p.Work(), p.Floor, tc.wantReserve, tc.wantWork, budget.DefaultFloor)
			}
		})
	}
}

func TestAnUnsetCeilingTakesTheLibrarysTimeout(t *testing.T) {
	cases := []struct {
		name        string
		lib         library
		wantCeiling bound
		wantValue   string // the default noted
		wantWhy     string // why the worst case is unbounded
	}{
		{
			name:        "openai-go sets none, so the model's worst case is unbounded",
			lib:         openai,
			wantCeiling: bound{Unbounded: true},
			wantValue:   "none",
			wantWhy:     "openai-go has no overall timeout by default",
		},
		{
			name:        "a library with a timeout of its own bounds each attempt by it",
			lib:         library{ceiling: 10 * time.Minute, whyCeiling: "its own", unbounded: func(string) string { return "never" }},
			wantCeiling: bound{D: 10 * time.Minute},
			wantValue:   "10m0s",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var p plan
			c, why := p.call("model", "", limits{Retries: new(0)}, tc.lib)
			if c.Ceiling != tc.wantCeiling || !c.DefaultCeiling || why != tc.wantWhy {
				t.Errorf("ceiling %+v (default %t), unbounded because %q; want %+v, a default, %q", c.Ceiling, c.DefaultCeiling, why, tc.wantCeiling, tc.wantWhy)
			}
			if len(p.Defaults) != 1 || p.Defaults[0].Value != tc.wantValue || p.Defaults[0].Why != tc.lib.whyCeiling {
				t.Errorf("defaults %+v, want the ceiling noted as %s", p.Defaults, tc.wantValue)
			}
		})
	}
	// openai's whyCeiling names RequestTimeout 0; it must say what model records.
	if model.SDKRequestTimeout != 0 {
		t.Errorf("model.SDKRequestTimeout is %v; openai.whyCeiling says openai-go sets none", model.SDKRequestTimeout)
	}
}

func TestLongestSleepsMatchesEachLibrarysBackoff(t *testing.T) {
	cases := []struct {
		name    string
		bo      budget.Backoff
		retries int
		want    time.Duration
	}{
		{"no retries sleep nothing", openai.backoff, 0, 0},
		{"openai-go sleeps 0.5s before its first retry", openai.backoff, 1, 500 * time.Millisecond},
		{"openai-go's default two retries sleep 1.5s", openai.backoff, 2, 1500 * time.Millisecond},
		{"openai-go's sleeps stop growing at 8s", openai.backoff, 7, (500 + 1000 + 2000 + 4000 + 8000 + 8000 + 8000) * time.Millisecond},
		{"a million retries are summed without looping a million times", openai.backoff, maxCount, 7500*time.Millisecond + (maxCount-4)*8*time.Second},
		{"a tool sleeps as Glidepath's default backoff", nethttp.backoff, 3, 1750 * time.Millisecond},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := longestSleeps(tc.bo, tc.retries); got != tc.want {
				t.Errorf("longestSleeps(%d) = %v, want %v", tc.retries, got, tc.want)
			}
		})
	}
}

func TestMakePlanRejectsEveryBadValueAtOnce(t *testing.T) {
	cases := []struct {
		name string
		cfg  planConfig
		want []fieldError // Field, Value and Err; Where from Origin
	}{
		{
			name: "a zero budget",
			cfg:  planConfig{Budget: new(time.Duration(0))},
			want: []fieldError{{Field: "budget", Value: "0s", Err: errNotPositive}},
		},
		{
			name: "a negative budget from a flag names the flag",
			cfg:  planConfig{Budget: new(-time.Second), Origin: map[string]string{"budget": "--budget"}},
			want: []fieldError{{Where: "--budget", Field: "budget", Value: "-1s", Err: errNotPositive}},
		},
		{
			name: "zero steps",
			cfg:  planConfig{Steps: new(0)},
			want: []fieldError{{Field: "steps", Value: "0", Err: errNotPositive}},
		},
		{
			name: "negative retries and ceilings, each located",
			cfg: planConfig{
				Model: limits{Retries: new(-1)},
				Tools: []toolConfig{{Name: "t", limits: limits{Ceiling: new(-time.Second), Retries: new(-2)}}},
				Origin: map[string]string{
					"model.retries": "a.yaml:4", "tools[0].ceiling": "a.yaml:7", "tools[0].retries": "a.yaml:8",
				},
			},
			want: []fieldError{
				{Where: "a.yaml:4", Field: "model.retries", Value: "-1", Err: errNegative},
				{Where: "a.yaml:7", Field: "tools[0].ceiling", Value: "-1s", Err: errNegative},
				{Where: "a.yaml:8", Field: "tools[0].retries", Value: "-2", Err: errNegative},
			},
		},
		{
			name: "absurd retries",
			cfg:  planConfig{Model: limits{Retries: new(maxCount + 1)}},
			want: []fieldError{{Field: "model.retries", Value: "1000001", Err: errTooMany}},
		},
		{
			name: "tool calls without tools",
			cfg:  planConfig{ToolCallsPerStep: new(2)},
			want: []fieldError{{Field: "tool_calls_per_step", Value: "2", Err: errNoTools}},
		},
		{
			name: "negative tool calls",
			cfg:  planConfig{ToolCallsPerStep: new(-1), Tools: []toolConfig{{Name: "t"}}},
			want: []fieldError{{Field: "tool_calls_per_step", Value: "-1", Err: errNegative}},
		},
		{
			name: "a tool without a name and a tool listed twice",
			cfg:  planConfig{Tools: []toolConfig{{Name: "a"}, {}, {Name: "a"}}},
			want: []fieldError{
				{Field: "tools[1].name", Err: errNoName},
				{Field: "tools[2].name", Value: "a", Err: errDuplicate},
			},
		},
		{
			name: "one flag that sets every tool is reported once",
			cfg: planConfig{
				Tools:  []toolConfig{{Name: "a", limits: limits{Retries: new(-1)}}, {Name: "b", limits: limits{Retries: new(-1)}}},
				Origin: map[string]string{"tools[0].retries": "--tool-retries", "tools[1].retries": "--tool-retries"},
			},
			want: []fieldError{{Where: "--tool-retries", Field: "tools[0].retries", Value: "-1", Err: errNegative}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := makePlan(tc.cfg)
			if err == nil {
				t.Fatal("makePlan succeeded, want an error")
			}
			joined, ok := err.(interface{ Unwrap() []error })
			if !ok {
				t.Fatalf("error %T is not joined", err)
			}
			var got []fieldError
			for _, e := range joined.Unwrap() {
				fe, ok := errors.AsType[*fieldError](e)
				if !ok {
					t.Fatalf("error %v is not a *fieldError", e)
				}
				got = append(got, *fe)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("errors:\n got %+v\nwant %+v", got, tc.want)
			}
			for _, w := range tc.want {
				if !errors.Is(err, w.Err) {
					t.Errorf("errors.Is(err, %v) = false", w.Err)
				}
			}
		})
	}
}

func TestFieldErrorMessageNamesWhereAndWhat(t *testing.T) {
	cases := []struct {
		err  fieldError
		want string
	}{
		{fieldError{Where: "a.yaml:3", Field: "budget", Value: "two minutes", Err: errNotDuration}, `a.yaml:3: budget "two minutes": not a duration (e.g. 90s, 2m)`},
		{fieldError{Where: "a.yaml:3", Field: "budget", Value: "0s", Err: errNotPositive}, `a.yaml:3: budget 0s: must be positive`},
		{fieldError{Where: "--model-retries", Field: "model.retries", Value: "-1", Err: errNegative}, `--model-retries -1: must not be negative`},
		{fieldError{Field: "tools[1].name", Err: errNoName}, `tools[1].name: required`},
	}
	for _, tc := range cases {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("Error() = %s, want %s", got, tc.want)
		}
	}
}
