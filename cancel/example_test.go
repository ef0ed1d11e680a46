package cancel_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/cancel"
)

// A key is minted once per logical call and sent with every attempt.
func ExampleNewKey() {
	k := cancel.NewKey()
	fmt.Println(len(k), regexp.MustCompile(`^gp_[a-z2-7]{26}$`).MatchString(string(k)))
	fmt.Println(k == cancel.NewKey())
	// Output:
	// 29 true
	// false
}

// The journal keeps a fingerprint of the arguments, not the arguments.
func ExampleArgsSHA256() {
	fmt.Println(cancel.ArgsSHA256(json.RawMessage(`{"amount":5}`)))
	// Output:
	// 7e84cbf0f7a7c92c037058665d66152f8eb8580ab2534e52c877bccceb9cc7bf
}

// An orphan stays open until an entry with a settled state is appended for
// its key.
func ExampleOpenOrphans() {
	entries := []cancel.Entry{
		{IdempotencyKey: "gp_pay", Tool: "pay", State: cancel.Open},
		{IdempotencyKey: "gp_ship", Tool: "ship", State: cancel.Open},
		{IdempotencyKey: "gp_pay", Tool: "pay", State: "done"},
	}
	for _, e := range cancel.OpenOrphans(entries) {
		fmt.Println(e.IdempotencyKey, e.Tool)
	}
	// Output:
	// gp_ship ship
}

// A run records an orphan, and a later reconcile records how it settled;
// the journal is only ever appended to.
func ExampleJournal() {
	dir, err := os.MkdirTemp("", "journal")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "glidepath", "orphans.jsonl")

	j, err := cancel.OpenJournal(path)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer j.Close()
	orphan := cancel.Entry{
		TS:             time.Date(2025, 3, 14, 15, 9, 26, 0, time.UTC),
		RunID:          "run-1",
		Tool:           "pay",
		URL:            "http://127.0.0.1:8080",
		IdempotencyKey: "gp_pay",
		ArgsSHA256:     cancel.ArgsSHA256(json.RawMessage(`{"amount":5}`)),
		State:          cancel.Open,
	}
	if err := j.Append(orphan); err != nil {
		fmt.Println(err)
		return
	}
	entries, _ := cancel.ReadJournal(path)
	fmt.Println("open:", len(cancel.OpenOrphans(entries)))

	settled := orphan
	settled.TS = orphan.TS.Add(time.Hour)
	settled.State = string(cancel.Done)
	if err := j.Append(settled); err != nil {
		fmt.Println(err)
		return
	}
	entries, _ = cancel.ReadJournal(path)
	fmt.Println("open:", len(cancel.OpenOrphans(entries)), "entries:", len(entries))
	raw, _ := os.ReadFile(path)
	fmt.Print(string(raw))
	// Output:
	// open: 1
	// open: 0 entries: 2
	// {"ts":"2025-03-14T15:09:26Z","run_id":"run-1","tool":"pay","url":"http://127.0.0.1:8080","idempotency_key":"gp_pay","args_sha256":"7e84cbf0f7a7c92c037058665d66152f8eb8580ab2534e52c877bccceb9cc7bf","state":"open"}
	// {"ts":"2025-03-14T16:09:26Z","run_id":"run-1","tool":"pay","url":"http://127.0.0.1:8080","idempotency_key":"gp_pay","args_sha256":"7e84cbf0f7a7c92c037058665d66152f8eb8580ab2534e52c877bccceb9cc7bf","state":"done"}
}

// A write timed out, but the tool committed it a moment later:
// reconciliation reads its status and uses its output instead of sending
// the write again.
func ExampleReconcile() {
	tool := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Println(r.Method, r.URL.Path)
		fmt.Fprint(w, `{"state":"done","output":{"receipt":"r-17"}}`)
	}))
	defer tool.Close()
	b, _ := budget.New(budget.Config{Total: time.Minute})

	r := cancel.Reconcile(context.Background(), b, budget.Backoff{}, cancel.Endpoint{URL: tool.URL, Tool: "pay"}, "gp_pay", nil)
	fmt.Println(r.State, string(r.Output), "orphan:", r.Orphan, "asks:", r.Asks)
	// Output:
	// GET /tools/pay/calls/gp_pay
	// done {"receipt":"r-17"} orphan: false asks: 1
}

// A status endpoint that cannot be reached leaves the outcome unknown: the
// call is an orphan, to be written to the journal.
func ExampleReconcile_unreachable() {
	tool := httptest.NewServer(http.NotFoundHandler())
	tool.Close()
	b, _ := budget.New(budget.Config{Total: time.Minute})

	r := cancel.Reconcile(context.Background(), b, budget.Backoff{}, cancel.Endpoint{URL: "http://user:secret@" + tool.Listener.Addr().String(), Tool: "pay"}, "gp_pay", nil)
	fmt.Println("orphan:", r.Orphan, "asks:", r.Asks)
	fmt.Println(regexp.MustCompile(`127\.0\.0\.1:\d+`).ReplaceAllString(r.Err.Error(), "HOST"))
	// Output:
	// orphan: true asks: 1
	// cancel: status endpoint unreachable: GET http://user:xxxxx@HOST/tools/pay/calls/gp_pay: dial tcp HOST: connect: connection refused
}

// A cancel is sent because the call's context ended, so it runs on its own
// short lease, not on that context.
func ExampleSend() {
	tool := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Println(r.Method, r.URL.Path)
		w.WriteHeader(http.StatusAccepted)
	}))
	defer tool.Close()
	b, _ := budget.New(budget.Config{Total: time.Minute})
	callCtx, stop := context.WithCancel(context.Background())
	stop() // the call's lease ended

	err := cancel.Send(callCtx, b, cancel.Endpoint{URL: tool.URL, Tool: "pay"}, "gp_pay")
	fmt.Println("accepted:", err == nil)
	// Output:
	// DELETE /tools/pay/calls/gp_pay
	// accepted: true
}

// An embedder whose tools are its own kind settles their orphans with its
// own status reader, chosen by what each entry records of its tool.
func ExampleReconcileJournal() {
	dir, _ := os.MkdirTemp("", "journal")
	defer os.RemoveAll(dir)
	j, _ := cancel.OpenJournal(filepath.Join(dir, "orphans.jsonl"))
	defer j.Close()
	j.Append(cancel.Entry{Tool: "enqueue", Kind: "queue:enqueue", IdempotencyKey: "gp_a", State: cancel.Open})
	j.Append(cancel.Entry{Tool: "mcp__fs__write", Kind: "tool:mcp__fs__write", IdempotencyKey: "gp_b", State: cancel.Open})

	queue := statusFunc(func(context.Context, cancel.Key) (cancel.Status, error) {
		return cancel.Status{State: cancel.Done}, nil // the queue's own record of the job
	})
	b, _ := budget.New(budget.Config{Total: 10 * time.Second})
	settled, err := cancel.ReconcileJournal(context.Background(), j, b, func(e cancel.Entry) (cancel.StatusReader, error) {
		if e.Kind == "queue:enqueue" {
			return queue, nil
		}
		return nil, fmt.Errorf("%w: not a queue job", cancel.ErrNoStatusReader)
	})
	if err != nil {
		panic(err)
	}
	for _, s := range settled {
		fmt.Println(s.Entry.Tool, s.Status.State, s.Recorded, s.Err)
	}
	// Output:
	// enqueue done true <nil>
	// mcp__fs__write  false cancel: no way to ask the tool: not a queue job
}

// statusFunc is a function as a cancel.StatusReader.
type statusFunc func(context.Context, cancel.Key) (cancel.Status, error)

func (f statusFunc) Status(ctx context.Context, k cancel.Key) (cancel.Status, error) {
	return f(ctx, k)
}
