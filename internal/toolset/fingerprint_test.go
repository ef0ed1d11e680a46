package toolset_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/glidepath/glidepath/internal/toolset"
	"github.com/glidepath/glidepath/tools"
	"github.com/glidepath/glidepath/tools/demo"
)

const fingerprinted = `tools:
  - name: commit
    url: http://127.0.0.1:9/
    effect: write
  - name: search
    builtin: search
`

func fingerprintOf(t *testing.T, yaml string) toolset.Fingerprint {
	t.Helper()
	builtins := demo.Builtins()
	cfg, err := tools.ParseConfig("tools.yaml", []byte(yaml), builtins)
	if err != nil {
		t.Fatal(err)
	}
	return toolset.New(cfg, toolset.Options{Builtins: builtins}).Fingerprint()
}

func TestAFingerprintChangesWithWhatACallDependsOnAndNothingElse(t *testing.T) {
	cases := []struct {
		name string
		yaml string
		same bool
	}{
		{"the same file loaded again matches", fingerprinted, true},
		{"the same tools in another order match", `tools:
  - name: search
    builtin: search
  - name: commit
    url: http://127.0.0.1:9/
    effect: write
`, true},
		{"a password or a query in the url is no part of it", strings.Replace(fingerprinted, "http://127.0.0.1:9/", "http://u:secret@127.0.0.1:9/?token=abc", 1), true},
		{"another effect differs", strings.Replace(fingerprinted, "effect: write", "effect: read", 1), false},
		{"another url differs", strings.Replace(fingerprinted, "127.0.0.1:9", "127.0.0.1:10", 1), false},
		{"a builtin in place of a remote tool differs", `tools:
  - name: commit
    builtin: late_commit
    effect: write
  - name: search
    builtin: search
`, false},
		{"a tool more differs", fingerprinted + "  - name: fetch\n    builtin: fetch\n", false},
	}
	want := fingerprintOf(t, fingerprinted)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := fingerprintOf(t, tc.yaml)
			if (got == want) != tc.same {
				t.Errorf("fingerprint %s, base %s: same=%v, want %v", got.Short(), want.Short(), got == want, tc.same)
			}
		})
	}
}

func TestNoToolsHaveTheFingerprintNoneAndSaySo(t *testing.T) {
	var s *toolset.Set
	if s.Fingerprint() != toolset.None {
		t.Errorf("a nil Set's fingerprint %s, want None", s.Fingerprint())
	}
	if got := toolset.None.Label(); !strings.HasSuffix(got, "(no tools)") || len(toolset.None.Short()) != toolset.ShortLen {
		t.Errorf("None's label %q", got)
	}
	if fingerprintOf(t, fingerprinted) == toolset.None {
		t.Error("a file with tools has the fingerprint of none")
	}
}

func TestCheckRefusesAnotherFingerprintNamingBothAndTheWorker(t *testing.T) {
	run, worker := fingerprintOf(t, fingerprinted), toolset.None
	err := toolset.Check(run, worker, "123@host", "tool:commit")
	me, ok := errors.AsType[*toolset.MismatchError](err)
	if !ok || !errors.Is(err, toolset.ErrMismatch) {
		t.Fatalf("Check = %v, want a MismatchError", err)
	}
	for _, want := range []string{run.Short(), worker.Short(), "(no tools)", "123@host", "tool:commit was not sent"} {
		if !strings.Contains(me.Error(), want) {
			t.Errorf("%q does not name %q", me.Error(), want)
		}
	}
	if err := toolset.Check(run, run, "w", "s"); err != nil {
		t.Errorf("Check of a match = %v", err)
	}
	if err := toolset.Check("", worker, "w", "s"); err != nil {
		t.Errorf("Check of a run set up before fingerprints = %v", err)
	}
}
