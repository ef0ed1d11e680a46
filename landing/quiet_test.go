package landing_test

import (
	"testing"
	"time"

	"github.com/glidepath/glidepath/landing"
	"github.com/glidepath/glidepath/watchdog"
)

func TestQuietWordsTellTheSilentCallsApart(t *testing.T) {
	model := watchdog.Call{Key: "model", Step: "model", AtHeaders: true}
	tool := watchdog.Call{Key: "gp_1", Step: "tool:crawl"}
	with := func(c watchdog.Call, e time.Duration, s watchdog.Source) watchdog.Call {
		c.Allowance, c.Source = e, s
		return c
	}
	cases := []struct {
		name       string
		silent     watchdog.Silent
		unanswered string
		want       string
	}{
		{"no call in flight leaves it to the cause", watchdog.Silent{}, "", ""},
		{"a model whose server never sent headers never answered",
			watchdog.Silent{Call: model, For: 2 * time.Second}, "",
			"the model's server never answered: no response headers in 2s"},
		{"a model held past its allowance was silent past its usual time",
			watchdog.Silent{Call: with(model, 6*time.Second, watchdog.SourceProfile), Headers: true, Held: true, For: 6 * time.Second}, "",
			"the model was silent past its usual time after its server answered: its allowance is 6s (2 × the p95 of the latency profile)"},
		{"a model answered and cut at Q before any chunk says its server answered, not that it sent nothing",
			watchdog.Silent{Call: model, Headers: true, For: 2 * time.Second}, "the model sent nothing for 2s",
			"the model's server answered, but no message came in 2s (nothing is known of how long it usually takes: the quiet period alone applied)"},
		{"a model answered and cut at Q keeps its stream's words, and says nothing held it",
			watchdog.Silent{Call: model, Headers: true, For: 2 * time.Second}, "the model sent only keepalives for 2s",
			"the model sent only keepalives for 2s (nothing is known of how long it usually takes: the quiet period alone applied)"},
		{"a tool held past its allowance says where the allowance came from",
			watchdog.Silent{Call: with(tool, 10*time.Second, watchdog.SourceStated), Held: true, For: 10 * time.Second}, "",
			"tool:crawl was silent past its usual time: its allowance is 10s (the silence its entry states)"},
		{"a tool silent after its progress says so, not that its allowance held nothing",
			watchdog.Silent{Call: with(tool, 40*time.Second, watchdog.SourceDeclared), Progressed: true, For: 5 * time.Second}, "",
			"tool:crawl was silent for 5s after its last progress"},
		{"a tool whose allowance is below Q says it held nothing",
			watchdog.Silent{Call: with(tool, time.Second, watchdog.SourceObserved), For: 2 * time.Second}, "",
			"tool:crawl was silent for 2s (its allowance, 1s from 2 × the p95 of this run's calls, is not above the quiet period)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := landing.QuietWords(watchdog.StallError{Call: tc.silent, Quiet: 2 * time.Second}, tc.unanswered)
			if got != tc.want {
				t.Errorf("QuietWords =\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}

func TestALiveLineWarnsOfAHeldCallAtHalfItsAllowance(t *testing.T) {
	held := func(step string, atHeaders bool, silent time.Duration) watchdog.Silent {
		return watchdog.Silent{Call: watchdog.Call{Step: step, Allowance: 6 * time.Second, AtHeaders: atHeaders}, Held: true, For: silent}
	}
	cases := []struct {
		name   string
		silent watchdog.Silent
		want   string
	}{
		{"a call not held shows nothing", watchdog.Silent{Call: watchdog.Call{Step: "model"}, For: time.Minute}, ""},
		{"a held tool under half its allowance shows nothing", held("tool:crawl", false, 2900*time.Millisecond), ""},
		{"a held tool at half its allowance is warned of", held("tool:crawl", false, 3*time.Second), "! crawl silent 3.0s of 6.0s"},
		{"a model is counted from its start", held("model", true, 3100*time.Millisecond), "! model silent 3.1s of 6.0s"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := landing.HeldWarning(tc.silent); got != tc.want {
				t.Errorf("HeldWarning = %q, want %q", got, tc.want)
			}
		})
	}
}

// Review of issue 27: a warning carries the step of the call it names, as
// its own records do, whatever step the host is at when it is written (a
// model turn may have ended, and its step been counted, in between).
func TestAQuietWarningCarriesTheStepOfTheCallItNames(t *testing.T) {
	named := watchdog.StallError{Call: watchdog.Silent{Call: watchdog.Call{Key: "model", Step: "model", Index: 3}}}
	if got := landing.Warning(named, 4).StepIndex; got != 3 {
		t.Errorf("step %d, want 3, the named call's", got)
	}
	if got := landing.Warning(watchdog.StallError{}, 4).StepIndex; got != 4 {
		t.Errorf("step %d, want 4, the host's, with no call named", got)
	}
}
