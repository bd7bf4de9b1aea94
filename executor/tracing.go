package executor

import (
	"context"
	"errors"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/replayctl/replayctl/internal/tracing"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/manifest"
	"github.com/replayctl/replayctl/protocol"
)

// noSpan is the span of what is not traced: ending it ends nothing.
var noSpan = tracing.NoSpan

// startJob starts the span of one execute of job m: the parent of its publish batches.
func startJob(ctx context.Context, tp trace.TracerProvider, m *manifest.Manifest) (context.Context, trace.Span) {
	if m == nil {
		return tracing.StartRun(ctx, tp, "execute", "", "", 0)
	}
	return tracing.StartRun(ctx, tp, "execute", m.ID, m.Consumer, m.EffectVersion.To)
}

// endJob ends the job's span with how the run ended.
func endJob(span trace.Span, r *Result, err error) {
	if !span.IsRecording() {
		return
	}
	defer span.End()
	if r != nil {
		span.SetAttributes(attribute.String("replayctl.job.status", string(r.JobStatus)),
			attribute.Int64("replayctl.completed", r.Final.Completed), attribute.Int("replayctl.uncertain", len(r.Uncertain)),
			attribute.Int("replayctl.failed", len(r.Failed)))
		if len(r.Uncertain) > 0 {
			span.AddEvent("uncertain", trace.WithAttributes(attribute.Int("replayctl.uncertain", len(r.Uncertain))))
		}
	}
	// The kind of end, not the error's text, which may name events.
	switch stop, stopped := errors.AsType[*StopError](err); {
	case stopped && stop.Stop != nil:
		span.SetStatus(codes.Error, "stopped: "+string(stop.Stop.Kind))
	case err != nil:
		if g, ok := errors.AsType[*GateError](err); ok {
			span.SetStatus(codes.Error, "refused by the "+g.Gate+" gate")
		} else {
			span.SetStatus(codes.Error, "execute failed: see `replayctl status` of the job")
		}
	}
}

// startBatch starts the span of one page of publishes under the job's.
func (s *session) startBatch(ctx context.Context, page []ledger.ExecTarget) (context.Context, trace.Span) {
	if !s.traced {
		return ctx, noSpan
	}
	return tracing.ChildTracer(ctx).Start(ctx, "publish batch", trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(tracing.KeyJobID.String(s.job.ID), tracing.KeyMessages.Int(len(page)),
			attribute.Int64("replayctl.stream_seq.first", int64(page[0].StreamSeq)),
			attribute.Int64("replayctl.stream_seq.last", int64(page[len(page)-1].StreamSeq))))
}

// startReplay starts the trace of one replayed message: a root of its own, which the consumer's
// delivery span joins through the traceparent written into msg, linked to the publish batch (and
// so to the job) and to the delivery that dead-lettered it, when the DLQ message named one.
func (s *session) startReplay(batch context.Context, t ledger.ExecTarget, msg *nats.Msg) trace.Span {
	links := []trace.Link{{SpanContext: trace.SpanContextFromContext(batch),
		Attributes: []attribute.KeyValue{attribute.String("replayctl.link", "publish batch")}}}
	if orig := tracing.Extract(originalTraceparent(msg.Header)); orig.IsValid() {
		links = append(links, trace.Link{SpanContext: orig,
			Attributes: []attribute.KeyValue{attribute.String("replayctl.link", "original delivery")}})
	}
	ctx, span := tracing.ChildTracer(batch).Start(batch, "replay "+s.job.Consumer, trace.WithNewRoot(), trace.WithLinks(links...),
		trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(tracing.KeyJobID.String(s.job.ID), tracing.KeyConsumer.String(s.job.Consumer),
			tracing.KeyEffectVersion.Int(s.job.EffectVersionTo), tracing.KeyEventIDHash.String(tracing.EventIDHash(t.EventID)),
			attribute.Int64("replayctl.dlq.stream_seq", int64(t.StreamSeq)), attribute.String("messaging.system", "nats")))
	tracing.Inject(ctx, msg.Header)
	return span
}

func originalTraceparent(h nats.Header) map[string][]string {
	if v := h[protocol.HeaderReplayOriginalTraceparent]; len(v) > 0 {
		return map[string][]string{protocol.HeaderTraceparent: v}
	}
	return nil
}

// endReplay ends a replayed message's span once JetStream answered its publish.
func endReplay(span trace.Span, ack *jetstream.PubAck, err error) {
	if span == nil || !span.IsRecording() {
		return
	}
	switch {
	case err != nil:
		span.AddEvent("publish not acknowledged; retried or recorded as failed")
		span.SetStatus(codes.Error, "publish not acknowledged")
	case ack != nil:
		span.SetAttributes(attribute.Int64("replayctl.stream_seq", int64(ack.Sequence)), attribute.Bool("replayctl.deduplicated", ack.Duplicate))
	}
	span.End()
}

// endBatch ends a page's span with what it published and what it could not.
func endBatch(span trace.Span, published, notPublished int) {
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(attribute.Int("replayctl.published", published), attribute.Int("replayctl.not_published", notPublished))
	span.End()
}
