package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/glidepath/glidepath/sim"
	"github.com/glidepath/glidepath/trace/spans"
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

// exportSpans returns the export of the process's spans over OTLP/HTTP
// when the standard OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT says where (SPEC §8); nil when
// neither is set. The exporter reads the other OTEL_* variables itself:
// headers, timeout, certificates; OTEL_SERVICE_NAME and
// OTEL_RESOURCE_ATTRIBUTES name the service (default "glidepath"). The
// SDK's batch processor exports off the run's path, from a bounded queue
// that drops when full: nothing it does waits on the collector.
//
// Chat spans name the model's server (server.address, server.port): the
// host and port of baseURL, or OpenAI's API when it is "" (the SDK's
// default); none for the embedded sim, whose loopback port is the run's.
func exportSpans(ctx context.Context, modelName, baseURL string) (*spanExport, error) {
	endpoint := os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
	if endpoint == "" {
		endpoint = os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT")
	}
	if endpoint == "" {
		return nil, nil
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_ENDPOINT: %w", err)
	}
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
		return fmt.Errorf("%d of %d spans were not delivered to %s: %v", lost, ended, e.endpoint, err)
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
// exports the collector accepted.
type countingExporter struct {
	sdktrace.SpanExporter
	delivered atomic.Int64
}

func (c *countingExporter) ExportSpans(ctx context.Context, ss []sdktrace.ReadOnlySpan) error {
	err := c.SpanExporter.ExportSpans(ctx, ss)
	if err == nil {
		c.delivered.Add(int64(len(ss)))
	}
	return err
}
