package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// otlpReceiver is a small OTLP/HTTP trace receiver on loopback: it keeps
// the names of the spans it is sent.
type otlpReceiver struct {
	mu    sync.Mutex
	names []string
	paths []string
	raw   []byte // every export request, as it came
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
