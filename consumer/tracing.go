package consumer

import (
	"context"
	"errors"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/replayctl/replayctl/internal/tracing"
	"github.com/replayctl/replayctl/protocol"
)

// noSpan is the span of what is not traced: ending it ends nothing.
var noSpan = tracing.NoSpan

// startDelivery starts the span of one delivery: a child of the message's traceparent (the
// producer's, or execute's for a replay), linked to the delivery that dead-lettered it when the
// message is a replay. With tracing off it is the no-op span and nothing is parsed.
func (c *Consumer) startDelivery(ctx context.Context, msg jetstream.Msg) (context.Context, trace.Span) {
	if !c.traced && !trace.SpanFromContext(ctx).IsRecording() {
		return ctx, noSpan
	}
	h := msg.Headers()
	if parent := tracing.Extract(h); parent.IsValid() {
		ctx = trace.ContextWithRemoteSpanContext(ctx, parent)
	}
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(tracing.KeyConsumer.String(c.cfg.Name), attribute.String("messaging.system", "nats"))}
	if orig := tracing.Extract(originalTrace(h)); orig.IsValid() {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: orig,
			Attributes: []attribute.KeyValue{attribute.String("replayctl.link", "original delivery")}}))
	}
	return c.tracer.Start(ctx, "deliver "+c.cfg.Name, opts...)
}

// originalTrace is the failed delivery's trace context a replay carries, as a traceparent header.
func originalTrace(h map[string][]string) map[string][]string {
	if v := h[protocol.HeaderReplayOriginalTraceparent]; len(v) > 0 {
		return map[string][]string{protocol.HeaderTraceparent: v}
	}
	return nil
}

// endDelivery describes what the delivery came to and ends its span. The event is named by its
// ID's hash; the reason by spanReason, never an error's text, which may quote an event or an
// order.
func (c *Consumer) endDelivery(span trace.Span, d *delivery, out Outcome) {
	if !span.IsRecording() {
		return
	}
	defer span.End()
	attrs := []attribute.KeyValue{tracing.KeyOutcome.String(string(out.Kind)), tracing.KeyDelivery.Int(d.ev.Delivery)}
	if out.EventID != "" {
		attrs = append(attrs, tracing.KeyEventIDHash.String(tracing.EventIDHash(out.EventID)))
	}
	if out.EffectVersion != 0 {
		attrs = append(attrs, tracing.KeyEffectVersion.Int(out.EffectVersion))
	}
	if d.ev.JobID != "" {
		attrs = append(attrs, tracing.KeyJobID.String(d.ev.JobID), tracing.KeyMode.String(string(d.ev.Mode)))
	}
	span.SetAttributes(attrs...)
	class := spanReason(out.Err)
	switch out.Kind {
	case OutcomeCompleted, OutcomeDuplicate, OutcomeReconciled, OutcomeBusinessFailure:
		span.SetStatus(codes.Ok, "")
	case OutcomeInProgress:
		span.AddEvent("in progress elsewhere")
	case OutcomeUncertain, OutcomeConflict, OutcomeDeadLettered, OutcomeInvalid, OutcomeRefused, OutcomeRetrying:
		tracing.Fail(span, string(out.Kind), class)
	}
}

// child starts a span under the delivery's when that one is recorded, and hands back the no-op
// span otherwise, so an untraced delivery pays for no span.
func child(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	if !trace.SpanFromContext(ctx).IsRecording() {
		return ctx, noSpan
	}
	return tracing.ChildTracer(ctx).Start(ctx, name, trace.WithAttributes(attrs...))
}

// traceEvent notes a fault on the delivery's span: a lease lapse, an uncertain call.
func traceEvent(ctx context.Context, name, class string) {
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		tracing.Fail(span, name, class)
	}
}

// endStep ends a step's span, failed when err is set.
func endStep(span trace.Span, err error) {
	if !span.IsRecording() {
		return
	}
	if err != nil {
		span.SetStatus(codes.Error, spanReason(err))
	}
	span.End()
}

// spanReasons are the SDK's errors whose text names a cause and nothing of an event.
var spanReasons = []error{ErrLeaseLost, ErrOutcomeUnknown, ErrNotExecuted, ErrInvalidMessage, ErrReplayRefused, ErrBadConfig,
	errHandlerPanicked}

// spanReason is what a span may say of err: the class WithReasonClass gave it (a class carries no
// event data by contract), else the first of the SDK's own causes in its chain, else nothing. An
// error's text is not: the SDK's errors quote the event ID, a handler's may quote an order.
func spanReason(err error) string {
	if err == nil {
		return ""
	}
	if c, ok := errors.AsType[*reasonClassError](err); ok {
		return c.class
	}
	for _, known := range spanReasons {
		if errors.Is(err, known) {
			return known.Error()
		}
	}
	return ""
}

// startCall starts the span of external call n of kind (say "charge"). Its target is not on
// it: an account or order ID is the payload's.
func (fx *Effects) startCall(ctx context.Context, kind string, n int) (context.Context, trace.Span) {
	if !fx.traced {
		return ctx, noSpan
	}
	return tracing.ChildTracer(ctx).Start(ctx, "effect "+kind, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(tracing.KeyEffectKind.String(kind), tracing.KeyEffectCall.Int(n)))
}

// endCall marks a call's span failed: "uncertain" when the write may have happened, "not
// made" or "not executed" when it certainly did not. The caller ends the span.
func endCall(span trace.Span, what string, err error) {
	if span.IsRecording() {
		tracing.Fail(span, what, spanReason(err))
	}
}

// deadLetterTrace is the trace context a dead letter carries for a later replay to link to: the
// failed delivery's span when it is traced, else the traceparent the message came with.
func deadLetterTrace(ctx context.Context, src, carried map[string][]string) {
	if trace.SpanFromContext(ctx).SpanContext().IsValid() {
		tracing.Inject(ctx, carried)
		return
	}
	if _, v := protocol.HeaderFold(src, protocol.HeaderTraceparent); len(v) > 0 {
		carried[protocol.HeaderTraceparent] = v
		if _, st := protocol.HeaderFold(src, protocol.HeaderTracestate); len(st) > 0 {
			carried[protocol.HeaderTracestate] = st
		}
	}
}

// startShadow starts the span of one shadow request, a child of shadow's request span.
func (c *Consumer) startShadow(ctx context.Context, msg *nats.Msg) (context.Context, trace.Span) {
	if !c.traced {
		return ctx, noSpan
	}
	if parent := tracing.Extract(msg.Header); parent.IsValid() {
		ctx = trace.ContextWithRemoteSpanContext(ctx, parent)
	}
	attrs := []attribute.KeyValue{tracing.KeyConsumer.String(c.cfg.Name), tracing.KeyMode.String(protocol.ModeShadow)}
	if id := msg.Header.Get(protocol.HeaderEventID); id != "" {
		attrs = append(attrs, tracing.KeyEventIDHash.String(tracing.EventIDHash(id)))
	}
	if job := msg.Header.Get(protocol.HeaderReplayJob); job != "" {
		attrs = append(attrs, tracing.KeyJobID.String(job))
	}
	return c.tracer.Start(ctx, "shadow "+c.cfg.Name, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
}

// endShadow ends a shadow request's span with its status and the calls the handler would make.
func endShadow(span trace.Span, reply protocol.ShadowReply) {
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(tracing.KeyOutcome.String(reply.Status), attribute.Int("replayctl.calls", len(reply.Effects)))
	if reply.Status != protocol.StatusOK {
		tracing.Fail(span, "shadow error", "the handler failed in shadow mode")
	}
	span.End()
}
