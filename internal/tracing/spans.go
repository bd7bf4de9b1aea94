package tracing

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/textproto"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/replayctl/replayctl/protocol"
)

// instrumentation names the tracer, as OpenTelemetry asks: the module, not a package.
const instrumentation = "github.com/replayctl/replayctl"

// Attribute keys, one name per concept across replayctl's spans (docs/tracing.md).
const (
	KeyConsumer      = attribute.Key("replayctl.consumer")
	KeyJobID         = attribute.Key("replayctl.job.id")
	KeyEffectVersion = attribute.Key("replayctl.effect_version")
	KeyOutcome       = attribute.Key("replayctl.outcome")
	KeyEventIDHash   = attribute.Key("replayctl.event_id.hash")
	KeyMode          = attribute.Key("replayctl.mode")
	KeyDelivery      = attribute.Key("replayctl.delivery")
	KeyEffectKind    = attribute.Key("replayctl.effect.kind")
	KeyEffectCall    = attribute.Key("replayctl.effect.call")
	KeyMessages      = attribute.Key("replayctl.messages")
	KeyRoute         = attribute.Key("replayctl.route")
	KeyKeyHash       = attribute.Key("replayctl.key.hash")
)

// TracerOf is replayctl's tracer from tp, or from the global provider when tp is nil: a no-op
// until Setup installed one, or the application's own when the SDK runs inside a service that
// configured OpenTelemetry.
func TracerOf(tp trace.TracerProvider) trace.Tracer {
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	return tp.Tracer(instrumentation)
}

// Active reports whether spans are worth starting: tp (nil: the global provider) is
// OpenTelemetry's SDK, installed by Setup or by the application. Whether a span is then recorded
// is its sampler's decision, per trace: an inactive provider costs no span at all, a sampled-out
// trace a span that records nothing and still carries its traceparent, so the consumers follow.
func Active(tp trace.TracerProvider) bool {
	if tp == nil {
		if Enabled() {
			return true
		}
		tp = otel.GetTracerProvider()
	}
	_, sdk := tp.(*sdktrace.TracerProvider)
	return sdk
}

// ChildTracer is the tracer of ctx's span's own provider: steps of a delivery or a job go to
// where their parent went.
func ChildTracer(ctx context.Context) trace.Tracer {
	return trace.SpanFromContext(ctx).TracerProvider().Tracer(instrumentation)
}

// EventIDHash names an event in a span without its ID: the first 16 hex digits of SHA-256. The
// ID may be a customer's order number; the hash still finds the span for someone who holds it
// (`printf %s ID | sha256sum | cut -c1-16`).
func EventIDHash(eventID string) string {
	sum := sha256.Sum256([]byte(eventID))
	return hex.EncodeToString(sum[:8])
}

// carrier is a NATS header as an OpenTelemetry carrier. NATS keeps a header's case as sent:
// producers write W3C's "traceparent", Go's propagation.HeaderCarrier "Traceparent". It reads
// either and writes the canonical form nats.Header.Get finds.
type carrier map[string][]string

func (c carrier) Get(key string) string {
	if _, v := protocol.HeaderFold(c, textproto.CanonicalMIMEHeaderKey(key)); len(v) > 0 {
		return v[0]
	}
	return ""
}

func (c carrier) Set(key, value string) {
	for k := range c {
		if strings.EqualFold(k, key) {
			delete(c, k)
		}
	}
	c[textproto.CanonicalMIMEHeaderKey(key)] = []string{value}
}

func (c carrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}

// Extract is the span context a message's traceparent names, invalid when it names none.
func Extract(h map[string][]string) trace.SpanContext {
	if h == nil {
		return trace.SpanContext{}
	}
	return trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), carrier(h)))
}

// Inject writes ctx's span as the message's traceparent (and tracestate), replacing any there in
// whatever case.
func Inject(ctx context.Context, h map[string][]string) {
	c := carrier(h)
	for _, k := range c.Keys() {
		if strings.EqualFold(k, protocol.HeaderTraceparent) || strings.EqualFold(k, protocol.HeaderTracestate) {
			delete(c, k)
		}
	}
	propagation.TraceContext{}.Inject(ctx, c)
}

// Fail marks span failed with a short class (never a payload field) and records it as an event
// named what happened ("uncertain", "lease lapsed", "conflict").
func Fail(span trace.Span, event, class string, attrs ...attribute.KeyValue) {
	span.AddEvent(event, trace.WithAttributes(append(attrs, attribute.String("replayctl.reason", class))...))
	span.SetStatus(codes.Error, event+": "+class)
}

// NoSpan is the span of what is not traced: ending it ends nothing.
var NoSpan = trace.SpanFromContext(context.Background())

// StartRun starts the span of one run of a job (verb "execute" or "shadow") of consumer: the
// parent of the run's own spans. tp nil is the global provider; with none active, NoSpan.
func StartRun(ctx context.Context, tp trace.TracerProvider, verb, jobID, consumer string, version int, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	if !Active(tp) {
		return ctx, NoSpan
	}
	name := verb
	if consumer != "" {
		name += " " + consumer
		attrs = append(attrs, KeyJobID.String(jobID), KeyConsumer.String(consumer), KeyEffectVersion.Int(version))
	}
	return TracerOf(tp).Start(ctx, name, trace.WithAttributes(attrs...))
}
