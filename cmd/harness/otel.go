package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/glidepath/glidepath/sim"
	"github.com/glidepath/glidepath/trace/spans"
	"github.com/go-logr/logr"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
)

// spanExportBound is the most the spans' export may take once the run is
// over, when its deadline is further off: the run has its answer, and its
// record is not worth holding the process much longer.
const spanExportBound = 2 * time.Second

// spanExportSlack is how far past the run's deadline the spans' export may
// go at most: the process must end within B + 50ms whatever the collector
// does (SPEC §8), and exiting after the export takes a few milliseconds.
const spanExportSlack = 10 * time.Millisecond

// spanExport is the OTLP/HTTP export of a process's spans: the sink that
// makes them and what counts them.
type spanExport struct {
	sink     *spans.Sink
	tp       *sdktrace.TracerProvider
	ended    *endCounter
	exporter *countingExporter
	endpoint string
}

// The variables that say where spans go (SPEC §8): the traces one as it
// is, else the base one with the traces path the SDK adds.
const (
	tracesEndpointVar = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	endpointVar       = "OTEL_EXPORTER_OTLP_ENDPOINT"
)

// errNotHTTPURL is what is wrong with an endpoint variable that cannot be
// used.
var errNotHTTPURL = errors.New("not an absolute http or https URL, such as http://localhost:4318")

// exportSpans returns the export of the process's spans over OTLP/HTTP
// when the standard OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT says where (SPEC §8); nil when
// neither is set to an absolute http or https URL. One that is set to
// something else is passed to warn, by name, with what is wrong with it,
// and ignored, as the OpenTelemetry specification of its environment
// variables asks of an invalid value (issue 24: "not a url" was taken
// for a path and every span lost). The SDK's own errors and log lines go
// to warn too, so that with --log-format json they are JSON lines like
// every other; those of the exports are counted instead, and said once at
// [spanExport.shutdown]. The exporter reads the other OTEL_* variables itself:
// headers, timeout, certificates; OTEL_SERVICE_NAME and
// OTEL_RESOURCE_ATTRIBUTES name the service (default "glidepath"). The
// SDK's batch processor exports off the run's path, from a bounded queue
// that drops when full: nothing it does waits on the collector.
//
// Chat spans name the model's server (server.address, server.port): the
// host and port of baseURL, or OpenAI's API when it is "" (the SDK's
// default); none for the embedded sim, whose loopback port is the run's.
func exportSpans(ctx context.Context, modelName, baseURL string, warn func(error)) (*spanExport, error) {
	endpoint, opts := otlpEndpoint(warn)
	if endpoint == "" {
		return nil, nil
	}
	exp, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_ENDPOINT: %w", err)
	}
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		if _, ok := errors.AsType[*exportError](err); !ok {
			warn(fmt.Errorf("spans: %w", err))
		}
	}))
	otel.SetLogger(logr.New(sdkLog{warn: warn}))
	res, err := resource.New(ctx, resource.WithAttributes(semconv.ServiceName("glidepath")), resource.WithFromEnv())
	if err != nil {
		return nil, fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	e := &spanExport{ended: &endCounter{}, exporter: &countingExporter{SpanExporter: exp}, endpoint: endpoint}
	e.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(e.ended), sdktrace.WithBatcher(e.exporter),
		sdktrace.WithResource(res))
	provider := "openai"
	if modelName == sim.ModelID {
		provider = "glidepath.sim"
	}
	cfg := spans.Config{Provider: provider, Model: modelName}
	if modelName != sim.ModelID {
		cfg.ServerAddress, cfg.ServerPort = serverOf(baseURL)
	}
	e.sink = spans.New(e.tp.Tracer("github.com/glidepath/glidepath"), cfg)
	return e, nil
}

// otlpEndpoint returns where spans go — the first of the traces variable
// and the base one that is an absolute http or https URL, "" for none —
// and the exporter's options that send them there. Each variable set to
// anything else is passed to warn and ignored: when the traces variable is,
// the base one is given to the exporter as a URL, as the SDK would have
// made it, since the SDK reads the traces variable itself.
func otlpEndpoint(warn func(error)) (endpoint string, opts []otlptracehttp.Option) {
	traces, base := os.Getenv(tracesEndpointVar), os.Getenv(endpointVar)
	ignored := func(name, v string) {
		then := "spans are not exported"
		if name == tracesEndpointVar && httpURL(base) {
			then = "spans go to " + endpointVar
		}
		warn(fmt.Errorf("%s %q: %w; it is ignored, and %s", name, v, errNotHTTPURL, then))
	}
	if traces != "" {
		if httpURL(traces) {
			return traces, nil
		}
		ignored(tracesEndpointVar, traces)
	}
	if base == "" {
		return "", nil
	}
	if !httpURL(base) {
		ignored(endpointVar, base)
		return "", nil
	}
	if traces != "" {
		u, _ := url.Parse(base)
		u.Path = path.Join(u.Path, "/v1/traces")
		opts = append(opts, otlptracehttp.WithEndpointURL(u.String()))
	}
	return base, opts
}

// httpURL reports whether v is an absolute http or https URL with a host.
func httpURL(v string) bool {
	u, err := url.Parse(v)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// sdkLog is the OpenTelemetry SDK's logger (otel.SetLogger): its errors
// and warnings (a span's attributes dropped at their limit) are passed to
// warn; its info and debug lines are dropped.
type sdkLog struct{ warn func(error) }

func (sdkLog) Init(logr.RuntimeInfo)            {}
func (sdkLog) Enabled(level int) bool           { return level <= 1 }
func (l sdkLog) WithValues(...any) logr.LogSink { return l }
func (l sdkLog) WithName(string) logr.LogSink   { return l }
func (l sdkLog) Info(_ int, msg string, kv ...any) {
	l.warn(fmt.Errorf("spans: %s", withValues(msg, kv)))
}
func (l sdkLog) Error(err error, msg string, kv ...any) {
	l.warn(fmt.Errorf("spans: %s: %w", withValues(msg, kv), err))
}

// withValues returns msg with its key-value pairs after it, as k=v.
func withValues(msg string, kv []any) string {
	var b strings.Builder
	b.WriteString(msg)
	for i := 0; i+1 < len(kv); i += 2 {
		fmt.Fprintf(&b, " %v=%v", kv[i], kv[i+1])
	}
	return b.String()
}

// serverOf returns the host and port a model's base URL names, the port
// its scheme implies when it names none; OpenAI's API for "".
func serverOf(baseURL string) (host string, port int) {
	u, err := url.Parse(baseURL)
	if baseURL == "" || err != nil || u.Host == "" {
		return openAIHost, 443
	}
	port, _ = strconv.Atoi(u.Port())
	if port == 0 && u.Scheme == "https" {
		port = 443
	} else if port == 0 {
		port = 80
	}
	return u.Hostname(), port
}

// shutdown exports what is left and stops, by deadline + spanExportSlack
// at the latest and within spanExportBound from now: the run's deadline,
// so that a dead collector cannot hold the process past its B + 50ms. It
// returns an error that counts the spans the collector did not get.
func (e *spanExport) shutdown(deadline time.Time) error {
	bound := deadline.Add(spanExportSlack)
	if later := time.Now().Add(spanExportBound); later.Before(bound) {
		bound = later
	}
	sctx, cancel := context.WithDeadline(context.Background(), bound)
	defer cancel()
	err := e.tp.Shutdown(sctx)
	ended, sent := e.ended.n.Load(), e.exporter.delivered.Load()
	if lost := ended - sent; lost > 0 {
		// Why: the shutdown's own failure, else the last export's (the
		// SDK hands those to its error handler, not to Shutdown).
		if err == nil {
			if last := e.exporter.last.Load(); last != nil {
				err = last.err
			}
		}
		if err == nil {
			return fmt.Errorf("%d of %d spans were not delivered to %s", lost, ended, e.endpoint)
		}
		return fmt.Errorf("%d of %d spans were not delivered to %s: %w", lost, ended, e.endpoint, err)
	}
	if err != nil {
		return fmt.Errorf("exporting spans to %s: %w", e.endpoint, err)
	}
	return nil
}

// endCounter is a span processor that counts the spans that ended: every
// one of them is owed to the collector.
type endCounter struct{ n atomic.Int64 }

func (c *endCounter) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (c *endCounter) OnEnd(sdktrace.ReadOnlySpan)                     { c.n.Add(1) }
func (c *endCounter) Shutdown(context.Context) error                  { return nil }
func (c *endCounter) ForceFlush(context.Context) error                { return nil }

// countingExporter counts the spans its exporter delivered: those of the
// exports the collector accepted. It keeps the last export's failure,
// which it returns as an *exportError: the error handler knows it by that,
// and leaves it to the count.
type countingExporter struct {
	sdktrace.SpanExporter
	delivered atomic.Int64
	last      atomic.Pointer[exportError]
}

func (c *countingExporter) ExportSpans(ctx context.Context, ss []sdktrace.ReadOnlySpan) error {
	err := c.SpanExporter.ExportSpans(ctx, ss)
	if err != nil {
		e := &exportError{err: err}
		c.last.Store(e)
		return e
	}
	c.delivered.Add(int64(len(ss)))
	return nil
}

// exportError is an export's failure, as the batch processor hands it to
// the SDK's error handler.
type exportError struct{ err error }

func (e *exportError) Error() string { return e.err.Error() }
func (e *exportError) Unwrap() error { return e.err }
