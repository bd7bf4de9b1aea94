package tracing

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
)

// shutdownTimeout bounds the flush of the last spans at exit: a collector that is down must not
// hold an operator's command.
const shutdownTimeout = 5 * time.Second

var enabled atomic.Bool

// Enabled reports whether Setup installed an exporter in this process. Callers use it to skip
// building attributes and links nobody will read.
func Enabled() bool { return enabled.Load() }

// ErrConfig is a tracing environment that cannot be honoured; the command goes on without traces.
var ErrConfig = errors.New("tracing: unusable OTEL_* environment")

// Setup installs a tracer provider exporting over OTLP when the environment configures one
// (OTEL_TRACES_EXPORTER=otlp, or an OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT), with the W3C trace
// context propagator. service is the default service.name (OTEL_SERVICE_NAME wins). It returns
// the flush to run at exit, never nil. With OTEL_SDK_DISABLED=true, OTEL_TRACES_EXPORTER=none or
// no endpoint, tracing stays off and the flush does nothing. An error wraps ErrConfig and tracing
// is off: traces are for looking at a replay, never a reason to refuse one.
func Setup(ctx context.Context, service string) (flush func(), err error) {
	noop := func() {}
	if !configured() {
		return noop, nil
	}
	exp, err := newExporter(ctx)
	if err != nil {
		return noop, err
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(semconv.ServiceName(service)))
	if err == nil {
		// Read last, so OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win over the default name.
		var fromEnv *resource.Resource
		if fromEnv, err = resource.New(ctx, resource.WithFromEnv()); err == nil {
			res, err = resource.Merge(res, fromEnv)
		}
	}
	if err != nil {
		return noop, fmt.Errorf("%w: resource: %w", ErrConfig, err)
	}
	// The sampler comes from OTEL_TRACES_SAMPLER when set (the SDK reads it), parent-based
	// always-on otherwise.
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.TraceContext{})
	enabled.Store(true)
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
		defer cancel()
		_ = tp.Shutdown(ctx)
	}, nil
}

// configured reads the OpenTelemetry environment: traces go out only when an exporter is named.
func configured() bool {
	if strings.EqualFold(os.Getenv("OTEL_SDK_DISABLED"), "true") {
		return false
	}
	switch strings.ToLower(strings.TrimSpace(os.Getenv("OTEL_TRACES_EXPORTER"))) {
	case "none":
		return false
	case "otlp":
		return true
	}
	return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// newExporter builds the OTLP exporter for the protocol the environment names: http/protobuf by
// default, as the specification says, or grpc. The exporters read the endpoint, headers, timeout
// and TLS settings from the environment themselves.
func newExporter(ctx context.Context) (sdktrace.SpanExporter, error) {
	if exp := strings.ToLower(strings.TrimSpace(os.Getenv("OTEL_TRACES_EXPORTER"))); exp != "" && exp != "otlp" {
		return nil, fmt.Errorf("%w: OTEL_TRACES_EXPORTER=%s is not supported: set otlp, or none", ErrConfig, exp)
	}
	protocol := os.Getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if protocol == "" {
		protocol = os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	var (
		exp sdktrace.SpanExporter
		err error
	)
	switch strings.ToLower(strings.TrimSpace(protocol)) {
	case "", "http/protobuf":
		exp, err = otlptracehttp.New(ctx)
	case "grpc":
		exp, err = otlptracegrpc.New(ctx)
	default:
		return nil, fmt.Errorf("%w: OTEL_EXPORTER_OTLP_PROTOCOL=%s is not supported: set http/protobuf or grpc", ErrConfig, protocol)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: OTLP exporter: %w", ErrConfig, err)
	}
	return exp, nil
}
