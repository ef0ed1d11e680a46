package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"log"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr/funcr"
	"go.opentelemetry.io/otel"
)

// harness run -v --log-format json with a collector that is down: every
// line on stderr is one JSON object, the OpenTelemetry SDK's own included
// (issue 24: its "traces export: … connection refused" came as a plain
// log line), and the count of spans not delivered says why, not "<nil>".
// A limit of one attribute per span makes the SDK's logger warn too.
func TestE2ETheSDKsOwnLinesAreJSONLinesToo(t *testing.T) {
	_, stderr, code := runHarness(t, []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://" + closedPort(t), "OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT=1"},
		"run", "-v", "--log-format", "json", "--budget", "20s", "q")
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	var warnings []string
	sc := bufio.NewScanner(strings.NewReader(stderr))
	for sc.Scan() {
		var m struct{ Level, Message string }
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Errorf("a stderr line is not JSON: %q", sc.Text())
			continue
		}
		if m.Level == "warn" {
			warnings = append(warnings, m.Message)
		}
	}
	has := func(part string) bool {
		return slices.ContainsFunc(warnings, func(w string) bool { return strings.Contains(w, part) })
	}
	if !has("spans were not delivered") || !has("connection refused") || has("<nil>") {
		t.Errorf("warnings %q; want the spans not delivered, with the collector's refusal as the reason", warnings)
	}
	if !has("harness run: warning: spans: limit reached: dropping trace Span attributes") {
		t.Errorf("warnings %q; want the SDK logger's warning about the attributes it dropped", warnings)
	}
}

// An OTLP endpoint variable that is not an absolute http(s) URL is warned
// about, by name and with what is wrong, and ignored (the OpenTelemetry
// specification of its environment variables: warn and ignore an invalid
// value), rather than taken for a path and every span lost behind a
// warning that ended in "<nil>" (issue 24).
func TestE2EAnOTLPEndpointThatIsNotAURLIsWarnedAboutAndIgnored(t *testing.T) {
	recv := &otlpReceiver{}
	collector := httptest.NewServer(recv)
	defer collector.Close()
	cases := []struct {
		name     string
		env      []string
		warning  string
		exported bool
	}{
		{name: "a base endpoint with spaces in it", env: []string{"OTEL_EXPORTER_OTLP_ENDPOINT=not a url"},
			warning: `harness run: warning: OTEL_EXPORTER_OTLP_ENDPOINT "not a url": not an absolute http or https URL, such as http://localhost:4318; it is ignored, and spans are not exported`},
		{name: "a traces endpoint without its scheme, beside a base one that is a URL",
			env:      []string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=localhost:4318", "OTEL_EXPORTER_OTLP_ENDPOINT=" + collector.URL},
			warning:  `harness run: warning: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT "localhost:4318": not an absolute http or https URL, such as http://localhost:4318; it is ignored, and spans go to OTEL_EXPORTER_OTLP_ENDPOINT`,
			exported: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr, code := runHarness(t, tc.env, "run", "--budget", "20s", "q")
			if code != exitOK {
				t.Fatalf("exit %d\n%s", code, stderr)
			}
			if !slices.Contains(strings.Split(stderr, "\n"), tc.warning) {
				t.Errorf("stderr:\n%s\nwant the line %q", stderr, tc.warning)
			}
			if strings.Contains(stderr, "<nil>") || strings.Contains(stderr, "not delivered") {
				t.Errorf("stderr:\n%s\nwant no spans said lost", stderr)
			}
			recv.mu.Lock()
			got := slices.Clone(recv.paths)
			recv.paths = nil
			recv.mu.Unlock()
			if exported := len(got) > 0; exported != tc.exported || exported && got[0] != "/v1/traces" {
				t.Errorf("the collector got exports at %v, want exported %v, at /v1/traces", got, tc.exported)
			}
		})
	}
}

// The SDK's error handler, as exportSpans sets it: an error of the SDK's
// is a warning on the command's stderr, through the writer that makes
// JSON lines of it; an export's failure is left to the count that
// shutdown reports, so that it is said once.
func TestTheSDKsErrorsAreTheCommandsWarnings(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+closedPort(t))
	var (
		mu  sync.Mutex
		got []string
	)
	want := []string{"spans: the sdk's own trouble"}
	t.Cleanup(func() { // after keepOTelGlobals's: the test's handler is gone
		mu.Lock()
		n := len(got)
		mu.Unlock()
		otel.Handle(errors.New("harness test: an sdk error after the test, for the default handler to print"))
		mu.Lock()
		defer mu.Unlock()
		if len(got) != n {
			t.Errorf("after the test, its handler still took %q", got[n:])
		}
	})
	keepOTelGlobals(t)
	e, err := exportSpans(t.Context(), "sim", "", func(err error) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, err.Error())
	})
	if err != nil || e == nil {
		t.Fatalf("exportSpans: %v, %v", e, err)
	}
	defer e.tp.Shutdown(t.Context())
	otel.Handle(errors.New("the sdk's own trouble"))
	otel.Handle(&exportError{err: errors.New("an export's failure")})
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(got, want) {
		t.Errorf("warned %q, want %q", got, want)
	}
}

// keepOTelGlobals puts back, when t ends, the OpenTelemetry SDK's global
// error handler and logger that exportSpans replaces, so that a test's
// handler, which writes to that test's state, does not take the errors of
// the tests after it. The error handler is put back as it was. The SDK's
// default one forwards for ever to the first handler set after it, so one
// that does what the default does (log.Print) is set first: the default,
// if it is still in place, forwards to that one. The logger cannot be read
// back (otel has SetLogger and no getter), so the SDK's default is put
// back in its place: its errors, and nothing below, printed through the
// log package.
func keepOTelGlobals(t *testing.T) {
	t.Helper()
	handler := otel.GetErrorHandler()
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { log.Print(err) }))
	t.Cleanup(func() {
		otel.SetErrorHandler(handler)
		otel.SetLogger(funcr.New(func(prefix, args string) {
			if prefix != "" {
				args = prefix + ": " + args
			}
			log.Print(args)
		}, funcr.Options{}))
	})
}
