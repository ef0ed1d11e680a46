package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/glidepath/glidepath/sim"
	"github.com/glidepath/glidepath/trace/spans"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
)

// spanExportBound is the most the spans' export may take once the run is
// over: the run lands on its budget, and its record is not worth holding
// the process much longer.
const spanExportBound = 2 * time.Second

// exportSpans returns the sink that exports the run's spans over OTLP/HTTP
// when the standard OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT says where (SPEC §8), and the
// function that flushes and stops it; nil when neither is set. The
// exporter reads the other OTEL_* variables itself: headers, timeout,
// certificates.
func exportSpans(ctx context.Context, modelName string) (*spans.Sink, func() error, error) {
	if os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
		return nil, nil, nil
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("OTEL_EXPORTER_OTLP_ENDPOINT: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp),
		sdktrace.WithResource(resource.NewSchemaless(semconv.ServiceName("glidepath"))))
	provider := "openai"
	if modelName == sim.ModelID {
		provider = "glidepath.sim"
	}
	sink := spans.New(tp.Tracer("github.com/glidepath/glidepath"), spans.Config{Provider: provider, Model: modelName})
	return sink, func() error {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), spanExportBound)
		defer cancel()
		return tp.Shutdown(sctx)
	}, nil
}
