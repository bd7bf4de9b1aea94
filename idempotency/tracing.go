package idempotency

import (
	"context"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/replayctl/replayctl/apikey"
	"github.com/replayctl/replayctl/internal/tracing"
)

// startRequest starts the span of one request through the middleware, under the server's own
// span when the application traces its HTTP server.
func (k *Keeper) startRequest(ctx context.Context, rt *route) (context.Context, trace.Span) {
	return k.tracer.Start(ctx, "idempotency "+rt.name, trace.WithAttributes(tracing.KeyRoute.String(rt.name)))
}

// traceKey names the request's key on its span by the short form of its keyed hash: never the
// raw key, which is a bearer of the stored response.
func traceKey(ctx context.Context, keyHash string) {
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.SetAttributes(tracing.KeyKeyHash.String(apikey.ShortHash(keyHash)))
	}
}

// count counts the request's answer, and sets it as the span's outcome: the answers that need a
// person or a retry mark the span failed.
func (k *Keeper) count(ctx context.Context, rt *route, answer string) {
	k.metrics.requests.WithLabelValues(rt.name, answer).Inc()
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(tracing.KeyOutcome.String(answer))
	switch answer {
	case answerUncertain, answerUnavailable, answerUnreadable, answerHandlerFailed, answerMismatch:
		tracing.Fail(span, answer, "answered "+answer)
	case answerHandled, answerReplayed, answerAlreadyDone, answerNoKey:
		span.SetStatus(codes.Ok, "")
	}
}
