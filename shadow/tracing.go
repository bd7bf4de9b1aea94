package shadow

import (
	"context"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/replayctl/replayctl/internal/tracing"
	"github.com/replayctl/replayctl/manifest"
)

// noSpan is the span of what is not traced: ending it ends nothing.
var noSpan = tracing.NoSpan

// startShadow starts the span of one shadow pass of job m: the parent of its requests.
func startShadow(ctx context.Context, m *manifest.Manifest) (context.Context, trace.Span) {
	mode := tracing.KeyMode.String("shadow")
	if m == nil {
		return tracing.StartRun(ctx, nil, "shadow", "", "", 0, mode)
	}
	return tracing.StartRun(ctx, nil, "shadow", m.ID, m.Consumer, m.EffectVersion.To, mode)
}

// endShadow ends the pass's span with its verdict.
func endShadow(span trace.Span, r *Report, err error) {
	if !span.IsRecording() {
		return
	}
	defer span.End()
	if r != nil {
		span.SetAttributes(attribute.Bool("replayctl.verdict.pass", r.Verdict.Pass), attribute.Int64("replayctl.targets", r.Totals.Targets),
			attribute.Int64("replayctl.changed", r.Totals.Changed), attribute.Int64("replayctl.answered", r.Totals.Answered))
		if !r.Verdict.Pass {
			span.AddEvent("verdict fail", trace.WithAttributes(attribute.Int("replayctl.reasons", len(r.Verdict.Reasons))))
		}
	}
	if err != nil {
		// Not the error's text, which may name an event.
		span.SetStatus(codes.Error, "shadow failed: see the command's error")
	}
}

// startRequest starts one shadow request's span under the pass's and writes it into msg as its
// traceparent, so the consumer's shadow span joins it.
func (r *requester) startRequest(ctx context.Context, eventID string, version int, msg *nats.Msg) trace.Span {
	if !r.traced {
		return noSpan
	}
	ctx, span := tracing.ChildTracer(ctx).Start(ctx, "shadow request", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(tracing.KeyJobID.String(r.jobID), tracing.KeyEffectVersion.Int(version),
			tracing.KeyEventIDHash.String(tracing.EventIDHash(eventID))))
	tracing.Inject(ctx, msg.Header)
	return span
}

// endRequest ends a request's span with how it was answered.
func endRequest(span trace.Span, a *answer, err error) {
	if !span.IsRecording() {
		return
	}
	defer span.End()
	switch {
	case err != nil:
		span.SetStatus(codes.Error, "the shadow pass could not go on")
	case a != nil:
		span.SetAttributes(tracing.KeyOutcome.String(a.status))
		if a.status != statusOK {
			tracing.Fail(span, a.status, "shadow request answered "+a.status)
		}
	}
}
