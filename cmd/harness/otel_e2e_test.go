package main

import (
	"bytes"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/glidepath/glidepath/trace/spans"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// otlpReceiver is a small OTLP/HTTP trace receiver on loopback: it keeps
// the names of the spans it is sent.
type otlpReceiver struct {
	mu     sync.Mutex
	names  []string
	paths  []string
	raw    []byte   // every export request, as it came
	bodies [][]byte // each export request
}

func (o *otlpReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	var req coltrace.ExportTraceServiceRequest
	if err != nil || proto.Unmarshal(body, &req) != nil {
		http.Error(w, "not an export request", http.StatusBadRequest)
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.paths = append(o.paths, r.URL.Path)
	o.raw = append(o.raw, body...)
	o.bodies = append(o.bodies, body)
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				o.names = append(o.names, s.Name)
			}
		}
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	b, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	w.Write(b)
}

// harness run with OTEL_EXPORTER_OTLP_ENDPOINT set exports the run's spans
// over OTLP/HTTP to it, before the process ends.
func TestE2EARunExportsItsSpansOverOTLPHTTP(t *testing.T) {
	recv := &otlpReceiver{}
	srv := httptest.NewServer(recv)
	defer srv.Close()

	_, stderr, code := runHarness(t, []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + srv.URL},
		"run", "--budget", "20s", "--tools", demoTools, "q")

	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	recv.mu.Lock()
	defer recv.mu.Unlock()
	for _, want := range []string{"invoke_agent glidepath", "chat sim", "execute_tool search"} {
		if !slices.Contains(recv.names, want) {
			t.Errorf("the receiver got spans %q, not %q", recv.names, want)
		}
	}
	if len(recv.paths) == 0 || recv.paths[0] != "/v1/traces" {
		t.Errorf("exported to %v, want /v1/traces", recv.paths)
	}
}

// exportedSpan is one span a receiver got, with its ids.
type exportedSpan struct {
	name              string
	traceID, spanID   string
	parentID          string
	service           string
	attributes, event []string // "key=value" of every string attribute, of the span and of its events
}

// spans decodes the export requests the receiver got.
func (o *otlpReceiver) spans(t *testing.T) []exportedSpan {
	t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []exportedSpan
	for _, body := range o.bodies {
		var req coltrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			t.Fatal(err)
		}
		for _, rs := range req.ResourceSpans {
			service := ""
			for _, a := range rs.Resource.GetAttributes() {
				if a.Key == "service.name" {
					service = a.Value.GetStringValue()
				}
			}
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					e := exportedSpan{name: s.Name, traceID: hex.EncodeToString(s.TraceId), spanID: hex.EncodeToString(s.SpanId),
						parentID: hex.EncodeToString(s.ParentSpanId), service: service}
					for _, a := range s.Attributes {
						e.attributes = append(e.attributes, a.Key+"="+a.Value.GetStringValue())
					}
					for _, ev := range s.Events {
						for _, a := range ev.Attributes {
							e.event = append(e.event, ev.Name+": "+a.Key+"="+a.Value.GetStringValue())
						}
					}
					out = append(out, e)
				}
			}
		}
	}
	return out
}

// A collector that takes the connection and never answers: `harness run
// --budget 1s` still ends within B + 50ms of its budget's start, and says
// on stderr how many spans were not delivered (SPEC §8).
func TestE2EADeadCollectorCostsTheProcessNothingPastItsBudget(t *testing.T) {
	hang := make(chan struct{})
	dead := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-hang:
		}
	}))
	defer dead.Close()
	defer close(hang)
	trc := filepath.Join(t.TempDir(), "trace.jsonl")
	// Under -race the child would sleep 1s at exit for the race detector's
	// reports (GORACE atexit_sleep_ms): not the product's time.
	env := []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + dead.URL, "GORACE=atexit_sleep_ms=0"}
	cmd := harnessCmd(t, env, "run", "--budget", "1s", "--trace", trc, "--json", "q")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	ended := time.Now()

	if code := cmd.ProcessState.ExitCode(); code != exitOK {
		t.Fatalf("exit %d (%v)\nstderr: %s", code, err, &stderr)
	}
	recs := readTrace(t, trc)
	began := recs[0].TS.Add(-time.Duration(recs[0].ElapsedMs) * time.Millisecond)
	took := ended.Sub(began)
	t.Logf("the process ended %v after its budget began (B = 1s)", took)
	if took > time.Second+50*time.Millisecond {
		t.Errorf("the process ended %v after its budget began, past B + 50ms", took)
	}
	m := regexp.MustCompile(`spans: (\d+) of (\d+) spans were not delivered to ` + regexp.QuoteMeta(dead.URL)).FindStringSubmatch(stderr.String())
	if m == nil || m[1] == "0" || m[1] != m[2] {
		t.Errorf("stderr %q; want it to count the spans not delivered, all of them", &stderr)
	}
}

// keysIn returns every idempotency key a trace names: in its records'
// keys, and anywhere in its text shaped like a minted key.
func keysIn(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	keys := regexp.MustCompile(`gp_[a-z2-7]{26}`).FindAllString(string(data), -1)
	for _, r := range readTrace(t, path) {
		if r.Key != "" {
			keys = append(keys, r.Key)
		}
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// A run with an orphan (a payment cut at its 500ms ceiling, whose status
// cannot be read) and a retried keyed call (a lookup answered 503 once):
// the trace names their keys, in records and in messages; not one byte
// exported over OTLP does (SPEC §8). The messages that named them are
// exported with the keys hashed.
func TestE2ENoIdempotencyKeyIsExportedRaw(t *testing.T) {
	var lookups atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("POST /tools/pay", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		<-r.Context().Done() // it may have paid; it never says
	})
	mux.HandleFunc("GET /tools/pay/calls/{key}", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":{"message":"status store down for `+r.PathValue("key")+`"}}`, http.StatusServiceUnavailable)
	})
	mux.HandleFunc("POST /tools/lookup", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if lookups.Add(1) == 1 {
			http.Error(w, `{"error":{"message":"busy with `+r.Header.Get("Idempotency-Key")+`"}}`, http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"output":"found"}`)
	})
	tool := httptest.NewServer(mux)
	defer tool.Close()
	recv := &otlpReceiver{}
	collector := httptest.NewServer(recv)
	defer collector.Close()
	cfg := writeFile(t, "tools.yaml", "tools:\n  - name: pay\n    url: "+tool.URL+"\n    effect: write\n    ceiling: 500ms\n"+
		"  - name: lookup\n    url: "+tool.URL+"\n    effect: read\n")
	dir := t.TempDir()
	trc := filepath.Join(dir, "trace.jsonl")

	stdout, stderr, code := runHarness(t, []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + collector.URL, "OTEL_SERVICE_NAME=checkout"}, "run", "--budget", "20s", "--json",
		"--journal", filepath.Join(dir, "orphans.jsonl"), "--tools", cfg, "--trace", trc, "pay-5")

	res := jsonResult(t, stdout)
	if code != exitPartial || res.Orphans != 1 || lookups.Load() != 2 {
		t.Fatalf("exit %d, %d orphans, %d lookups; want 3, one orphan, a lookup retried\nstderr: %s", code, res.Orphans, lookups.Load(), stderr)
	}
	keys := keysIn(t, trc)
	if len(keys) < 2 {
		t.Fatalf("the trace names keys %v, want the payment's and the lookup's", keys)
	}
	trace, _ := os.ReadFile(trc)
	var named []string // the keys a message of the trace names: those a span event could carry
	for _, r := range readTrace(t, trc) {
		for _, k := range keys {
			if strings.Contains(r.Message, k) {
				named = append(named, k)
			}
		}
	}
	if len(named) == 0 {
		t.Fatalf("no message of the trace names a key: the test would prove nothing\n%s", trace)
	}
	recv.mu.Lock()
	raw := slices.Clone(recv.raw)
	recv.mu.Unlock()
	if len(raw) == 0 {
		t.Fatal("nothing was exported")
	}
	for _, k := range keys {
		if bytes.Contains(raw, []byte(k)) {
			t.Errorf("key %s is in the exported bytes", k)
		}
	}
	for _, sp := range recv.spans(t) {
		if sp.service != "checkout" {
			t.Errorf("span %s of service %q, want OTEL_SERVICE_NAME's checkout", sp.name, sp.service)
			break
		}
	}
	// The orphan's messages (its reconcile's error names its key) are
	// exported, the key in them hashed.
	if k := res.InFlight[0].IdempotencyKey; !slices.Contains(named, k) || !bytes.Contains(raw, []byte(spans.HashKey(k))) {
		t.Errorf("the exported bytes do not name the orphan %s by its hash %s (messages name %v)", k, spans.HashKey(k), named)
	}
}

// harness run → harness serve, both exporting to one collector: the served
// child's invoke_agent span is in the caller's trace, a child of the
// caller's execute_tool span, through the call's traceparent (SPEC §8).
func TestE2EAServedChildsSpansAreInItsCallersTrace(t *testing.T) {
	recv := &otlpReceiver{}
	collector := httptest.NewServer(recv)
	defer collector.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.URL) // for both processes
	s := serveProcess(t, "--tools", slowAgent(t))
	parentTools := writeFile(t, "parent.yaml", "tools:\n  - name: slowpoke\n    url: "+s.base+"\n")

	stdout, stderr, code := runHarness(t, nil, "run", "--budget", "4s", "--tools", parentTools, "--json", "q")

	if res := jsonResult(t, stdout); code != exitOK || res.Status != "complete" {
		t.Fatalf("parent exit %d, %+v\nstderr: %s", code, res, stderr)
	}
	if code := s.stop(t); code != 0 {
		t.Fatalf("harness serve exited %d\n%s", code, s.log())
	}
	all := recv.spans(t)
	var call *exportedSpan
	for i, sp := range all {
		if sp.name == "execute_tool slowpoke" {
			call = &all[i]
		}
	}
	if call == nil {
		t.Fatalf("no execute_tool slowpoke span among %d", len(all))
	}
	var child *exportedSpan
	for i, sp := range all {
		if strings.HasPrefix(sp.name, "invoke_agent") && sp.parentID == call.spanID {
			child = &all[i]
		}
	}
	if child == nil {
		var agents []string
		for _, sp := range all {
			if strings.HasPrefix(sp.name, "invoke_agent") {
				agents = append(agents, sp.name+" parent "+sp.parentID+" trace "+sp.traceID)
			}
		}
		t.Fatalf("no invoke_agent span is a child of the call's span %s (trace %s): %v\n%s", call.spanID, call.traceID, agents, s.log())
	}
	if child.traceID != call.traceID {
		t.Errorf("the child's span is in trace %s, the call's in %s", child.traceID, call.traceID)
	}
	// The child's own attempts are under its run: the served process
	// exported them too.
	var under int
	for _, sp := range all {
		if sp.parentID == child.spanID {
			under++
		}
	}
	if under == 0 {
		t.Errorf("no span under the served child's run")
	}
}
