package kit_test

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/glidepath/glidepath/tools/kit"
)

func TestMemoryStoreBeginStartsOnlyANewCallOrARetryOfARetryableFailure(t *testing.T) {
	id := kit.CallID{Tool: "t", Key: "k"}
	cases := []struct {
		name        string
		before      *kit.Record // finished before Begin; nil: no record
		running     bool        // an attempt begun and not finished
		args        string
		wantStarted bool
		wantState   kit.State
		wantTries   int
	}{
		{name: "unknown call", args: "a", wantStarted: true, wantState: kit.Running, wantTries: 1},
		{name: "running", running: true, args: "a", wantState: kit.Running, wantTries: 1},
		{name: "done", before: &kit.Record{State: kit.Done, Output: []byte(`1`)}, args: "a", wantState: kit.Done, wantTries: 1},
		{name: "failed for good", before: &kit.Record{State: kit.Failed}, args: "a", wantState: kit.Failed, wantTries: 1},
		{name: "failed retryably", before: &kit.Record{State: kit.Failed, Retryable: true}, args: "a", wantStarted: true, wantState: kit.Running, wantTries: 2},
		{name: "failed retryably, other arguments", before: &kit.Record{State: kit.Failed, Retryable: true}, args: "b", wantState: kit.Failed, wantTries: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var m kit.MemoryStore
			ctx := t.Context()
			if tc.before != nil || tc.running {
				first, _, _ := m.Begin(ctx, id, "a")
				if tc.before != nil {
					rec := *tc.before
					rec.ArgsSHA256, rec.Attempts = "a", first.Attempts
					m.Finish(ctx, id, rec)
				}
			}
			rec, started, err := m.Begin(ctx, id, tc.args)
			if err != nil || started != tc.wantStarted || rec.State != tc.wantState || rec.Attempts != tc.wantTries {
				t.Errorf("Begin: %+v started %v (%v), want %s started %v attempts %d", rec, started, err, tc.wantState, tc.wantStarted, tc.wantTries)
			}
		})
	}
}

func TestMemoryStoreForgetsAFinishedRecordAfterItsTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := &kit.MemoryStore{TTL: time.Minute}
		ctx := t.Context()
		done, running := kit.CallID{Tool: "t", Key: "done"}, kit.CallID{Tool: "t", Key: "running"}
		m.Begin(ctx, done, "a")
		m.Finish(ctx, done, kit.Record{State: kit.Done, ArgsSHA256: "a", Attempts: 1})
		m.Begin(ctx, running, "a")
		time.Sleep(time.Minute - time.Nanosecond)
		if _, ok, _ := m.Get(ctx, done); !ok {
			t.Errorf("forgotten before its TTL")
		}
		time.Sleep(time.Nanosecond)
		if _, ok, _ := m.Get(ctx, done); ok {
			t.Errorf("kept at its TTL")
		}
		time.Sleep(time.Hour)
		if rec, ok, _ := m.Get(ctx, running); !ok || rec.State != kit.Running {
			t.Errorf("a running record was forgotten")
		}
		if rec, started, _ := m.Begin(ctx, done, "a"); !started || rec.Attempts != 1 {
			t.Errorf("a forgotten call is new again: got %+v started %v", rec, started)
		}
	})
}

func TestMemoryStoreDefaultsToAnHour(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var m kit.MemoryStore
		ctx := t.Context()
		id := kit.CallID{Tool: "t", Key: "k"}
		m.Begin(ctx, id, "a")
		m.Finish(ctx, id, kit.Record{State: kit.Done})
		time.Sleep(kit.DefaultTTL - time.Nanosecond)
		if m.Len() != 1 {
			t.Errorf("forgotten before DefaultTTL")
		}
		time.Sleep(time.Nanosecond)
		if m.Len() != 0 {
			t.Errorf("kept at DefaultTTL")
		}
	})
}

func TestMemoryStoreKeepsAtMostMaxRecordsFinishedForgettingTheOldest(t *testing.T) {
	m := &kit.MemoryStore{MaxRecords: 3}
	ctx := t.Context()
	id := func(i int) kit.CallID { return kit.CallID{Tool: "t", Key: fmt.Sprint(i)} }
	m.Begin(ctx, id(100), "a") // running: never forgotten, not counted
	for i := range 5 {
		m.Begin(ctx, id(i), "a")
		m.Finish(ctx, id(i), kit.Record{State: kit.Done})
	}
	for i, want := range []bool{false, false, true, true, true} {
		if _, ok, _ := m.Get(ctx, id(i)); ok != want {
			t.Errorf("record %d kept %v, want %v", i, ok, want)
		}
	}
	if _, ok, _ := m.Get(ctx, id(100)); !ok || m.Len() != 4 {
		t.Errorf("running record kept %v, %d records in all; want it kept and 4", ok, m.Len())
	}
	// A retry moves a record to the back of the line.
	m.Finish(ctx, id(2), kit.Record{State: kit.Failed, Retryable: true})
	m.Begin(ctx, id(2), "")
	m.Finish(ctx, id(2), kit.Record{State: kit.Done})
	m.Begin(ctx, id(5), "a")
	m.Finish(ctx, id(5), kit.Record{State: kit.Done})
	for i, want := range map[int]bool{2: true, 3: false, 4: true, 5: true} {
		if _, ok, _ := m.Get(ctx, id(i)); ok != want {
			t.Errorf("after the retry, record %d kept %v, want %v", i, ok, want)
		}
	}
}
