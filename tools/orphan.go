package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"path/filepath"
	"time"

	"github.com/glidepath/glidepath/cancel"
)

// Orphan journals the call of the tool name with key as an orphan of run
// (its ID and Journal), a write whose outcome is unknown for why, the way
// a Registry's own calls journal theirs: a host that makes attempts away
// from a Registry (a Temporal activity) calls it (issue 25). args are the
// model's, hashed as they were sent (compacted; empty or not JSON: {}).
// It returns the orphan, and, when it is in no journal, why for the model
// and the journal's error ([Run.Journal] nil: one that says no journal is
// configured). The entry is appended and fsync'd before it returns (SPEC
// §5: a crash loses no orphan already reported). A tool r does not have,
// or a nil r, is journaled with nothing that reaches it again; a nil run
// has no journal.
func (r *Registry) Orphan(run *Run, name string, key cancel.Key, args json.RawMessage, why error) (*OrphanError, string, error) {
	if run == nil {
		run = &Run{} // no journal: the orphan is reported, recorded nowhere
	}
	var buf bytes.Buffer
	if len(bytes.TrimSpace(args)) == 0 || json.Compact(&buf, args) != nil {
		buf.Reset()
		buf.WriteString("{}")
	}
	reg := &registered{spec: Spec{Name: name, Kind: KindPrefix + name}}
	if r != nil {
		if found, ok := r.lookup(name); ok {
			reg = found
		}
	}
	return orphan(run, reg, key, buf.Bytes(), why)
}

// orphan journals the call of reg with key and sent, its arguments exactly
// as sent, as [Registry.Orphan] says.
func orphan(run *Run, reg *registered, key cancel.Key, sent json.RawMessage, why error) (*OrphanError, string, error) {
	e := cancel.Entry{
		TS:             time.Now(),
		RunID:          run.ID,
		Tool:           reg.spec.Name,
		Kind:           reg.spec.Kind,
		IdempotencyKey: key,
		ArgsSHA256:     cancel.ArgsSHA256(sent),
		State:          cancel.Open,
	}
	// How to reach the tool again, from outside this run (issue 17): its
	// URL, and the tools file that built it, made absolute against this
	// process's directory, which a later harness reconcile may not share.
	if b, ok := reg.impl.(baseURLer); ok {
		e.URL = b.baseURL()
	}
	for _, t := range [...]Tool{reg.tool, reg.impl} {
		if f, ok := t.(ToolsFiler); ok && f.ToolsFile() != "" {
			e.ToolsFile = f.ToolsFile()
			if abs, err := filepath.Abs(e.ToolsFile); err == nil {
				e.ToolsFile = abs
			}
			break
		}
	}
	_, asks := reg.impl.(cancel.StatusReader)
	_, builtin := reg.tool.(respec)
	oe := &OrphanError{Entry: e, Err: why, Reachable: e.URL != "" || e.ToolsFile != "" && asks && !builtin}
	if run.Journal == nil {
		return oe, NotJournaled(errNoJournal), errNoJournal
	}
	if err := run.Journal.Append(e); err != nil {
		oe.Err = errors.Join(why, err)
		return oe, NotJournaled(err), err
	}
	oe.Journaled = true
	oe.Next = cancel.SettleCommand(run.Journal.Path(), key, cancel.Done)
	if oe.Reachable {
		oe.Next = cancel.ReconcileCommand(run.Journal.Path())
	}
	return oe, "", nil
}

var errNoJournal = errors.New("tools: no orphan journal")
