package battery

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/glidepath/glidepath/model"
	"github.com/glidepath/glidepath/sim"
	"github.com/glidepath/glidepath/tools/kit"
)

// A world is what one run talks to: a sim of its own (so that a rule's
// request counts are the run's, not the cell's) and a tool server of its
// own on loopback, serving the scenario's one tool over the remote tool
// protocol of SPEC §5 at / and over MCP at /mcp, behind a fault layer.
//
// The tool server is tools/kit, which gives the Glidepath side the whole
// protocol (idempotency by key, status, cancel, SSE progress). The world
// itself counts what matters to the battery, so that no system is judged
// by the protocol it speaks: commits per logical write (the order id in
// the arguments, not the idempotency key, which a baseline does not send
// or sends fresh on each attempt), and the times at which the stalled part
// last did real work.
type world struct {
	sc      *Scenario
	sim     *sim.Server
	kit     *kit.Server
	http    *httptest.Server
	tr      *http.Transport
	client  *http.Client // the tool server's, for every system
	release chan struct{}

	// mu guards the fields below it.
	mu       sync.Mutex
	commits  map[string]int // by order id
	dropped  map[string]bool
	anon     int         // keys minted for POSTs that came without one
	toolReqs int         // tool calls received: POSTs, and MCP calls
	replays  int         // of those, the battery's own replays of refused calls
	work     []time.Time // when the tool last did real work: each arrival, each progress
}

// newWorld starts the servers of one run of sc.
func newWorld(sc *Scenario) (*world, error) {
	w := &world{
		sc:      sc,
		kit:     &kit.Server{KeepaliveEvery: sc.keepaliveEvery, Logger: discardLogger},
		release: make(chan struct{}),
		commits: map[string]int{},
		dropped: map[string]bool{},
	}
	if err := w.kit.Register(sc.tool.kitTool(w)); err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", w.kit.MCPHandler())
	mux.Handle("/", http.HandlerFunc(w.serveFaults))
	w.http = httptest.NewUnstartedServer(mux)
	w.http.Config.ErrorLog = log.New(io.Discard, "", 0) // a dropped connection is the fault, not news
	w.http.Start()
	w.sim = sim.NewServer(sc.model)
	w.tr = &http.Transport{MaxIdleConnsPerHost: 4}
	w.client = &http.Client{Transport: w.tr}
	return w, nil
}

// url is the tool server's base URL U.
func (w *world) url() string { return w.http.URL }

// close stops the world and waits for everything it started. Handlers
// that ignore their context on purpose are released first; a late commit
// is not: it finishes, since whether it happens is what the battery
// counts.
func (w *world) close() {
	close(w.release)
	w.kit.Close()
	w.http.Close()
	w.sim.Close()
	w.tr.CloseIdleConnections()
}

// serveFaults is the fault layer in front of the kit.
func (w *world) serveFaults(rw http.ResponseWriter, r *http.Request) {
	post := r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/tools/")
	if post {
		// A caller that sends no Idempotency-Key makes a new call each
		// time, as it would of any server that does not insist on one;
		// the kit does insist, so the world mints one.
		w.mu.Lock()
		w.toolReqs++
		if r.Header.Get("Idempotency-Key") == "" {
			w.anon++
			r.Header.Set("Idempotency-Key", "anon-"+strconv.Itoa(w.anon))
		}
		w.mu.Unlock()
	}
	if r.Method == http.MethodDelete && w.sc.cancelHangs {
		select {
		case <-r.Context().Done():
		case <-w.release:
		}
		return
	}
	if post && w.sc.loseFirst {
		body, err := io.ReadAll(io.LimitReader(r.Body, kit.DefaultMaxBody))
		if err != nil {
			http.Error(rw, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		var req struct {
			Arguments json.RawMessage `json:"arguments"`
		}
		_ = json.Unmarshal(body, &req) // a bad body is the kit's to refuse
		order := orderOf(req.Arguments)
		w.mu.Lock()
		lose := !w.dropped[order]
		w.dropped[order] = true
		w.mu.Unlock()
		if lose {
			// The request is lost on the way: the connection drops before
			// anything reaches the tool, so the status endpoint says never
			// received (404).
			if conn, _, err := http.NewResponseController(rw).Hijack(); err == nil {
				conn.Close()
			}
			return
		}
	}
	w.kit.ServeHTTP(rw, r)
}

// replay makes each refused tool call again, straight to the tool server,
// under the lease the budget would have granted it, and returns how many
// answered within it: the refusals of calls that would have fit. Only a
// read is replayed (a write would commit); a refusal granted nothing
// cannot fit. The replays are not counted as the run's requests.
func (w *world) replay(ctx context.Context, refusals []refusal) int {
	fit := 0
	for _, r := range refusals {
		name, ok := strings.CutPrefix(r.step, "tool:")
		if !ok || name != w.sc.tool.name || w.sc.tool.effect != kit.Read || r.grant <= 0 {
			continue
		}
		w.mu.Lock()
		w.replays++
		w.mu.Unlock()
		rctx, cancel := context.WithTimeout(ctx, r.grant)
		_, err := postTool(rctx, w.client, w.url()+"/tools/"+name, w.sc.replayArgs(), "")
		cancel()
		if err == nil {
			fit++
		}
	}
	return fit
}

// commit records one commit of the write order.
func (w *world) commit(order string) {
	w.mu.Lock()
	w.commits[order]++
	w.mu.Unlock()
}

// worked records that the tool did real work now: a call arrived, or it
// reported progress.
func (w *world) worked(call *kit.Call) {
	w.mu.Lock()
	if call != nil && call.MCP {
		w.toolReqs++
	}
	w.work = append(w.work, time.Now())
	w.mu.Unlock()
}

// progress reports progress for call and records it as work.
func (w *world) progress(call *kit.Call, units, total int64) {
	w.mu.Lock()
	w.work = append(w.work, time.Now())
	w.mu.Unlock()
	call.Progress(units, total, "working")
}

// tally is what the servers of a world saw, read once the world closed.
type tally struct {
	writes, commits, duplicates int
	modelReqs, toolReqs         int
}

func (w *world) tally() tally {
	w.mu.Lock()
	defer w.mu.Unlock()
	t := tally{toolReqs: w.toolReqs - w.replays}
	for _, n := range w.commits {
		if n > 0 {
			t.writes++
			t.commits += n
			t.duplicates += n - 1
		}
	}
	for _, r := range w.sim.Requests() {
		if w.asked(r) {
			t.modelReqs++
		}
	}
	return t
}

// asked reports whether r is a model request in the scenario's API: one
// in the other is not counted, so that a system that spoke the wrong API
// is seen to have asked nothing.
func (w *world) asked(r sim.Request) bool {
	path := "/v1/chat/completions"
	if w.sc.API == model.APIResponses {
		path = "/v1/responses"
	}
	return r.Completion > 0 && r.Path == path
}

// stallFrom returns when the stalled part last did real work before
// noticed: for a tool, a call's arrival or a progress report; for the
// model, a request's arrival. ok is false when nothing did.
func (w *world) stallFrom(noticed time.Time) (time.Time, bool) {
	var marks []time.Time
	switch w.sc.Stall {
	case StallTool:
		w.mu.Lock()
		marks = slices.Clone(w.work)
		w.mu.Unlock()
	case StallModel:
		for _, r := range w.sim.Requests() {
			if w.asked(r) {
				marks = append(marks, r.Time)
			}
		}
	}
	var last time.Time
	for _, m := range marks {
		if !m.After(noticed) && m.After(last) {
			last = m
		}
	}
	return last, !last.IsZero()
}

// orderOf reads the order id of a write's arguments; "" when there is
// none, so that every call of a tool without one is the same write.
func orderOf(args json.RawMessage) string {
	var a struct {
		OrderID string `json:"order_id"`
	}
	_ = json.Unmarshal(args, &a)
	return a.OrderID
}
