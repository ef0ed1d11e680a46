package plan

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
		cfg  Config

		wantModel     Bound
		wantPerStep   Bound
		wantTotal     Bound
		wantRATotal   Bound // with Retry-After
		wantSlowest   string
		wantUnbounded []string
		wantVerdict   string
	}{
		{
			// Everything left out: openai-go's model has no timeout.
			name:          "an empty configuration is unbounded because openai-go sets no timeout",
			cfg:           Config{},
			wantModel:     Bound{D: 1500 * time.Millisecond, Unbounded: true},
			wantPerStep:   Bound{D: 1500 * time.Millisecond, Unbounded: true},
			wantTotal:     Bound{D: 50 * 1500 * time.Millisecond, Unbounded: true},
			wantRATotal:   Bound{D: 50 * 4 * time.Minute, Unbounded: true},
			wantUnbounded: []string{"openai-go has no overall timeout by default"},
			wantVerdict:   "unbudgeted worst case is unbounded (openai-go has no overall timeout by default); under Glidepath the run lands by 2m0s",
		},
		{
			// The example config: the tools are bounded, the model is not.
			name: "an unset model ceiling makes the total unbounded even when every tool is bounded",
			cfg: Config{
				Budget: new(2 * time.Minute), Steps: new(20),
				Tools: []Tool{
					{Name: "search", Limits: Limits{Ceiling: new(30 * time.Second), Retries: new(2)}},
					{Name: "fetch", Limits: Limits{Ceiling: new(10 * time.Second)}},
				},
			},
			wantModel: Bound{D: 1500 * time.Millisecond, Unbounded: true},
			// search: 30s × 3 + (250ms + 500ms) = 1m30.75s.
			wantPerStep:   Bound{D: 1500*time.Millisecond + 90750*time.Millisecond, Unbounded: true},
			wantTotal:     Bound{D: 20 * (1500*time.Millisecond + 90750*time.Millisecond), Unbounded: true},
			wantRATotal:   Bound{D: 20 * (4*time.Minute + 90750*time.Millisecond), Unbounded: true},
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
			cfg: Config{
				Budget: new(2 * time.Minute), Steps: new(10), ToolCallsPerStep: new(2),
				Model: Limits{Ceiling: new(30 * time.Second), Retries: new(3)},
				Tools: []Tool{
					{Name: "a", Limits: Limits{Ceiling: new(5 * time.Second), Retries: new(1)}},
					{Name: "b", Limits: Limits{Ceiling: new(8 * time.Second), Retries: new(0)}},
				},
			},
			wantModel:   Bound{D: 123500 * time.Millisecond},
			wantPerStep: Bound{D: 144 * time.Second},
			wantTotal:   Bound{D: 24 * time.Minute},
			wantRATotal: Bound{D: time.Hour + 23*time.Minute + 25*time.Second},
			wantSlowest: "a",
			wantVerdict: "unbudgeted worst case is 24m0s, 12.0× the 2m0s budget; under Glidepath the run lands by 2m0s",
		},
		{
			// model: 60s × 1 = 60s; tool: 39s × 1 = 39s; 20 × 99s = 33m.
			name: "a bounded total is compared with the budget it was meant to fit",
			cfg: Config{
				Steps: new(20),
				Model: Limits{Ceiling: new(time.Minute), Retries: new(0)},
				Tools: []Tool{{Name: "t", Limits: Limits{Ceiling: new(39 * time.Second)}}},
			},
			wantModel:   Bound{D: time.Minute},
			wantPerStep: Bound{D: 99 * time.Second},
			wantTotal:   Bound{D: 33 * time.Minute},
			wantRATotal: Bound{D: 33 * time.Minute},
			wantSlowest: "t",
			wantVerdict: "unbudgeted worst case is 33m0s, 16.5× the 2m0s budget; under Glidepath the run lands by 2m0s",
		},
		{
			// 2 × (1s × 3 + 1.5s) = 9s
			name: "a total inside the budget says so",
			cfg: Config{
				Budget: new(10 * time.Second), Steps: new(2),
				Model: Limits{Ceiling: new(time.Second)},
			},
			wantModel:   Bound{D: 4500 * time.Millisecond},
			wantPerStep: Bound{D: 4500 * time.Millisecond},
			wantTotal:   Bound{D: 9 * time.Second},
			wantRATotal: Bound{D: 2 * (3*time.Second + 4*time.Minute)},
			wantVerdict: "unbudgeted worst case is 9s, within the 10s budget; under Glidepath the run lands by 10s",
		},
		{
			name: "a ceiling of zero is no timeout and says so",
			cfg: Config{
				Steps: new(1),
				Model: Limits{Ceiling: new(time.Duration(0)), Retries: new(0)},
			},
			wantModel:     Bound{Unbounded: true},
			wantPerStep:   Bound{Unbounded: true},
			wantTotal:     Bound{Unbounded: true},
			wantRATotal:   Bound{Unbounded: true},
			wantUnbounded: []string{"model.ceiling is 0, which means no timeout"},
		},
		{
			// b is unbounded, so it is the slowest though a's number is larger.
			name: "a tool with no ceiling is the slowest and is named as a reason",
			cfg: Config{
				Steps: new(1),
				Model: Limits{Ceiling: new(time.Second), Retries: new(0)},
				Tools: []Tool{
					{Name: "a", Limits: Limits{Ceiling: new(time.Hour)}},
					{Name: "b"},
				},
			},
			wantModel:     Bound{D: time.Second},
			wantPerStep:   Bound{D: time.Second, Unbounded: true},
			wantTotal:     Bound{D: time.Second, Unbounded: true},
			wantRATotal:   Bound{D: time.Second, Unbounded: true},
			wantSlowest:   "b",
			wantUnbounded: []string{"tool b has no ceiling and net/http sets no timeout"},
		},
		{
			name: "a tool never called costs nothing even without a ceiling",
			cfg: Config{
				Budget: new(2 * time.Second), Steps: new(3), ToolCallsPerStep: new(0),
				Model: Limits{Ceiling: new(time.Second), Retries: new(0)},
				Tools: []Tool{{Name: "idle"}},
			},
			wantModel:   Bound{D: time.Second},
			wantPerStep: Bound{D: time.Second},
			wantTotal:   Bound{D: 3 * time.Second},
			wantRATotal: Bound{D: 3 * time.Second},
			wantSlowest: "idle",
			wantVerdict: "unbudgeted worst case is 3s, 1.5× the 2s budget; under Glidepath the run lands by 2s",
		},
		{
			name: "a total beyond what a duration holds saturates rather than wraps",
			cfg: Config{
				Steps: new(MaxCount),
				Model: Limits{Ceiling: new(time.Duration(math.MaxInt64 / 4)), Retries: new(MaxCount)},
			},
			wantModel:   Bound{D: math.MaxInt64},
			wantPerStep: Bound{D: math.MaxInt64},
			wantTotal:   Bound{D: math.MaxInt64},
			wantRATotal: Bound{D: math.MaxInt64},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Make(tc.cfg)
			if err != nil {
				t.Fatalf("Make: %v", err)
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
			if tc.wantVerdict != "" && p.Verdict() != tc.wantVerdict {
				t.Errorf("verdict:\n got %s\nwant %s", p.Verdict(), tc.wantVerdict)
			}
		})
	}
}

func TestMakePlanFillsAndNamesEveryDefaultItUses(t *testing.T) {
	cases := []struct {
		name         string
		cfg          Config
		wantDefaults []string // "field=value"
		wantRetries  []int    // model's, then each tool's
		wantBackoff  []time.Duration
	}{
		{
			name:         "everything left out takes harness run's and openai-go's defaults",
			cfg:          Config{},
			wantDefaults: []string{"budget=2m0s", "steps=50", "model.ceiling=none", "model.retries=2"},
			wantRetries:  []int{2},
			wantBackoff:  []time.Duration{1500 * time.Millisecond},
		},
		{
			name: "a tool left without Limits gets net/http's: no timeout, no retries",
			cfg: Config{
				Budget: new(time.Minute), Steps: new(5),
				Model: Limits{Ceiling: new(time.Second), Retries: new(4)},
				Tools: []Tool{{Name: "fetch"}},
			},
			wantDefaults: []string{"tool_calls_per_step=1", "tools[0].ceiling=none", "tools[0].retries=0"},
			wantRetries:  []int{4, 0},
			// 0.5s + 1s + 2s + 4s
			wantBackoff: []time.Duration{7500 * time.Millisecond, 0},
		},
		{
			name: "retries given are used and only the ceiling is defaulted",
			cfg: Config{
				Budget: new(time.Minute), Steps: new(5), ToolCallsPerStep: new(1),
				Model: Limits{Retries: new(0)},
				Tools: []Tool{{Name: "s", Limits: Limits{Ceiling: new(time.Second), Retries: new(3)}}},
			},
			wantDefaults: []string{"model.ceiling=none"},
			wantRetries:  []int{0, 3},
			// 250ms + 500ms + 1s
			wantBackoff: []time.Duration{0, 1750 * time.Millisecond},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Make(tc.cfg)
			if err != nil {
				t.Fatalf("Make: %v", err)
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
			calls := append([]Call{p.Model}, p.Tools...)
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
			p, err := Make(Config{Budget: new(tc.budget)})
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
		lib         Library
		wantCeiling Bound
		wantValue   string // the default noted
		wantWhy     string // why the worst case is unbounded
	}{
		{
			name:        "openai-go sets none, so the model's worst case is unbounded",
			lib:         OpenAI,
			wantCeiling: Bound{Unbounded: true},
			wantValue:   "none",
			wantWhy:     "openai-go has no overall timeout by default",
		},
		{
			name:        "a library with a timeout of its own bounds each attempt by it",
			lib:         Library{ceiling: 10 * time.Minute, whyCeiling: "its own", unbounded: func(string) string { return "never" }},
			wantCeiling: Bound{D: 10 * time.Minute},
			wantValue:   "10m0s",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var p Plan
			c, why := p.call("model", "", Limits{Retries: new(0)}, tc.lib)
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
		{"no retries sleep nothing", OpenAI.backoff, 0, 0},
		{"openai-go sleeps 0.5s before its first retry", OpenAI.backoff, 1, 500 * time.Millisecond},
		{"openai-go's default two retries sleep 1.5s", OpenAI.backoff, 2, 1500 * time.Millisecond},
		{"openai-go's sleeps stop growing at 8s", OpenAI.backoff, 7, (500 + 1000 + 2000 + 4000 + 8000 + 8000 + 8000) * time.Millisecond},
		{"a million retries are summed without looping a million times", OpenAI.backoff, MaxCount, 7500*time.Millisecond + (MaxCount-4)*8*time.Second},
		{"a tool sleeps as Glidepath's default backoff", NetHTTP.backoff, 3, 1750 * time.Millisecond},
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
		cfg  Config
		want []FieldError // Field, Value and Err; Where from Origin
	}{
		{
			name: "a zero budget",
			cfg:  Config{Budget: new(time.Duration(0))},
			want: []FieldError{{Field: "budget", Value: "0s", Err: ErrNotPositive}},
		},
		{
			name: "a negative budget from a flag names the flag",
			cfg:  Config{Budget: new(-time.Second), Origin: map[string]string{"budget": "--budget"}},
			want: []FieldError{{Where: "--budget", Field: "budget", Value: "-1s", Err: ErrNotPositive}},
		},
		{
			name: "zero steps",
			cfg:  Config{Steps: new(0)},
			want: []FieldError{{Field: "steps", Value: "0", Err: ErrNotPositive}},
		},
		{
			name: "negative retries and ceilings, each located",
			cfg: Config{
				Model: Limits{Retries: new(-1)},
				Tools: []Tool{{Name: "t", Limits: Limits{Ceiling: new(-time.Second), Retries: new(-2)}}},
				Origin: map[string]string{
					"model.retries": "a.yaml:4", "tools[0].ceiling": "a.yaml:7", "tools[0].retries": "a.yaml:8",
				},
			},
			want: []FieldError{
				{Where: "a.yaml:4", Field: "model.retries", Value: "-1", Err: ErrNegative},
				{Where: "a.yaml:7", Field: "tools[0].ceiling", Value: "-1s", Err: ErrNegative},
				{Where: "a.yaml:8", Field: "tools[0].retries", Value: "-2", Err: ErrNegative},
			},
		},
		{
			name: "absurd retries",
			cfg:  Config{Model: Limits{Retries: new(MaxCount + 1)}},
			want: []FieldError{{Field: "model.retries", Value: "1000001", Err: ErrTooMany}},
		},
		{
			name: "tool calls without tools",
			cfg:  Config{ToolCallsPerStep: new(2)},
			want: []FieldError{{Field: "tool_calls_per_step", Value: "2", Err: ErrNoTools}},
		},
		{
			name: "negative tool calls",
			cfg:  Config{ToolCallsPerStep: new(-1), Tools: []Tool{{Name: "t"}}},
			want: []FieldError{{Field: "tool_calls_per_step", Value: "-1", Err: ErrNegative}},
		},
		{
			name: "a tool without a name and a tool listed twice",
			cfg:  Config{Tools: []Tool{{Name: "a"}, {}, {Name: "a"}}},
			want: []FieldError{
				{Field: "tools[1].name", Err: ErrNoName},
				{Field: "tools[2].name", Value: "a", Err: ErrDuplicate},
			},
		},
		{
			name: "one flag that sets every tool is reported once",
			cfg: Config{
				Tools:  []Tool{{Name: "a", Limits: Limits{Retries: new(-1)}}, {Name: "b", Limits: Limits{Retries: new(-1)}}},
				Origin: map[string]string{"tools[0].retries": "--tool-retries", "tools[1].retries": "--tool-retries"},
			},
			want: []FieldError{{Where: "--tool-retries", Field: "tools[0].retries", Value: "-1", Err: ErrNegative}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Make(tc.cfg)
			if err == nil {
				t.Fatal("Make succeeded, want an error")
			}
			joined, ok := err.(interface{ Unwrap() []error })
			if !ok {
				t.Fatalf("error %T is not joined", err)
			}
			var got []FieldError
			for _, e := range joined.Unwrap() {
				fe, ok := errors.AsType[*FieldError](e)
				if !ok {
					t.Fatalf("error %v is not a *FieldError", e)
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
		err  FieldError
		want string
	}{
		{FieldError{Where: "a.yaml:3", Field: "budget", Value: "two minutes", Err: ErrNotDuration}, `a.yaml:3: budget "two minutes": not a duration (e.g. 90s, 2m)`},
		{FieldError{Where: "a.yaml:3", Field: "budget", Value: "0s", Err: ErrNotPositive}, `a.yaml:3: budget 0s: must be positive`},
		{FieldError{Where: "--model-retries", Field: "model.retries", Value: "-1", Err: ErrNegative}, `--model-retries -1: must not be negative`},
		{FieldError{Field: "tools[1].name", Err: ErrNoName}, `tools[1].name: required`},
	}
	for _, tc := range cases {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("Error() = %s, want %s", got, tc.want)
		}
	}
}
