package tools_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/cancel"
	"github.com/glidepath/glidepath/tools"
)

func TestAStatusCommandSaysHowACallWent(t *testing.T) {
	cases := []struct {
		name    string
		script  string
		want    cancel.Status
		wantErr bool
	}{
		{"done, with its output", `echo '{"state":"done","output":{"receipt":"'$GLIDEPATH_IDEMPOTENCY_KEY'"}}'`,
			cancel.Status{State: cancel.Done, Output: json.RawMessage(`{"receipt":"gp_k"}`)}, false},
		{"never received", `echo '{"state":"never_received"}'`, cancel.Status{State: cancel.NeverReceived}, false},
		{"running, with units", `echo '{"state":"running","units":3}'`, cancel.Status{State: cancel.Running, Units: 3}, false},
		{"a failed status command", `echo store down >&2; exit 1`, cancel.Status{}, true},
		{"an answer that is not one", `echo fine`, cancel.Status{}, true},
		{"an unknown state", `echo '{"state":"maybe"}'`, cancel.Status{}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tool := tools.CommandWithStatus(tools.Spec{Name: "pay"}, []string{"true"}, []string{"sh", "-c", tc.script})
			s, ok := tool.(cancel.StatusReader)
			if !ok {
				t.Fatal("a command with a status command is not a cancel.StatusReader")
			}
			got, err := s.Status(t.Context(), "gp_k")
			if tc.wantErr {
				if !errors.Is(err, cancel.ErrUnreachable) {
					t.Errorf("Status = %+v, %v; want an error matching ErrUnreachable", got, err)
				}
				return
			}
			if err != nil || got.State != tc.want.State || string(got.Output) != string(tc.want.Output) || got.Units != tc.want.Units {
				t.Errorf("Status = %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
	if _, ok := tools.Command(tools.Spec{Name: "pay"}, []string{"true"}).(cancel.StatusReader); ok {
		t.Error("a command without a status command claims to say how a call went")
	}
}

// A command write cut at its lease after it committed: with a status
// command it is reconciled in the run; without, it is an orphan whose
// journal entry names the tools file, so that harness reconcile can build
// it again from there.
func TestACommandWriteFromAToolsFileIsReconciledOrJournaledWithItsFile(t *testing.T) {
	dir := t.TempDir()
	ledger := filepath.Join(dir, "ledger")
	file := filepath.Join(dir, "tools.yaml")
	pay := `[sh, -c, 'echo "$GLIDEPATH_IDEMPOTENCY_KEY" >> ` + ledger + `; exec sleep 30']`
	status := `[sh, -c, 'grep -qx "$GLIDEPATH_IDEMPOTENCY_KEY" ` + ledger + ` && echo "{\"state\":\"done\",\"output\":\"paid\"}"']`
	err := os.WriteFile(file, []byte(`tools:
  - {name: pay, effect: write, ceiling: 300ms, command: `+pay+`, status: `+status+`}
  - {name: blind_pay, effect: write, ceiling: 300ms, command: `+pay+`}
`), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := tools.LoadConfig(file, nil)
	if err != nil {
		t.Fatal(err)
	}
	reg := tools.NewRegistry(nil)
	for _, tl := range cfg.Tools(nil) {
		if err := reg.Register(tl); err != nil {
			t.Fatal(err)
		}
	}
	j, err := cancel.OpenJournal(filepath.Join(dir, "orphans.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	b, err := budget.New(budget.Config{Total: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	run := &tools.Run{ID: "run-1", Budget: b, Journal: j}

	res := reg.Call(t.Context(), run, "pay", nil)
	if res.Err != "" || string(res.Output) != `"paid"` || res.Attempts != 1 {
		t.Errorf("pay = %+v, want it reconciled by its status command, done", res)
	}
	res = reg.Call(t.Context(), run, "blind_pay", nil)
	if res.State != tools.StateOrphaned || !strings.Contains(res.Err, "recorded for reconciliation") {
		t.Errorf("blind_pay = %+v, want a journaled orphan", res)
	}
	entries, err := cancel.ReadJournal(j.Path())
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Tool != "blind_pay" || entries[0].ToolsFile != file ||
		entries[0].Kind != "tool:blind_pay" || entries[0].URL != "" || entries[0].IdempotencyKey != res.Key {
		t.Errorf("journal %+v, want blind_pay's orphan naming %s", entries, file)
	}
	paid, _ := os.ReadFile(ledger)
	if n := strings.Count(string(paid), "\n"); n != 2 {
		t.Errorf("%d payments, want one per call:\n%s", n, paid)
	}
}
