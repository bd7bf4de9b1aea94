package executor_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/replayctl/replayctl/executor"
	"github.com/replayctl/replayctl/internal/testenv/exectest"
	"github.com/replayctl/replayctl/protocol"
)

// A traced execute gives each replayed message a trace of its own: a root span the message's
// traceparent names (the consumer's delivery joins it), linked to the job's publish batch and to
// the delivery that dead-lettered it. The DLQ message's traceparent (W3C's lower case, as a
// producer writes it) never travels as the replay's own.
func TestATracedExecuteGivesEachReplayItsOwnTraceLinkedToTheOriginal(t *testing.T) {
	t.Parallel()
	e := exectest.New(t, exectest.Options{})
	originals := map[string]string{}
	for i := range 3 {
		id := exectest.EventID(i)
		originals[id] = fmt.Sprintf("00-4bf92f3577b34da6a3ce929d0e0e47%02d-00f067aa0ba902b7-01", i)
		data, _ := json.Marshal(exectest.Order(i))
		msg := nats.NewMsg(exectest.DLQSubject)
		msg.Data = data
		msg.Header.Set(protocol.HeaderEventID, id)
		msg.Header.Set("Dlq-Original-Subject", exectest.OriginalSubject)
		msg.Header["traceparent"] = []string{originals[id]}
		if _, err := e.NATS.JS.PublishMsg(e.Ctx, msg); err != nil {
			t.Fatal(err)
		}
	}
	e.Seed(0) // the ledger's history: the plan expects a completed charge's two calls per target
	m := e.Plan("job-exec-traced")
	e.Shadow(m)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	// No consumer: the messages stay in the stream to be read; the run stalls, by design.
	_, err := execute(e, options(m, func(o *executor.Options) {
		o.SettleTimeout = 300 * time.Millisecond
		o.TracerProvider = tp
	}))
	if _, ok := errors.AsType[*executor.StopError](err); !ok {
		t.Fatalf("want a stall without a consumer, got %v", err)
	}

	spans := rec.Ended()
	var job, batch sdktrace.ReadOnlySpan
	replays := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range spans {
		switch s.Name() {
		case "execute " + exectest.Consumer:
			job = s
		case "publish batch":
			batch = s
		case "replay " + exectest.Consumer:
			replays[s.SpanContext().TraceID().String()] = s
		}
	}
	if job == nil || batch == nil || batch.Parent().SpanID() != job.SpanContext().SpanID() {
		t.Fatalf("want a job span with a publish batch under it, got %d spans", len(spans))
	}
	for seq := uint64(1); seq <= 3; seq++ {
		msg := e.StreamMessage(seq)
		id := msg.Header.Get(protocol.HeaderEventID)
		if got := msg.Header.Get(protocol.HeaderReplayOriginalTraceparent); got != originals[id] {
			t.Errorf("%s: Replay-Original-Traceparent %q, want the DLQ message's %q", id, got, originals[id])
		}
		if v := msg.Header["traceparent"]; len(v) != 0 {
			t.Errorf("%s: the DLQ message's traceparent travelled as the replay's own: %v", id, v)
		}
		var traceID string
		if _, err := fmt.Sscanf(msg.Header.Get(protocol.HeaderTraceparent), "00-%32s", &traceID); err != nil {
			t.Fatalf("%s: traceparent %q: %v", id, msg.Header.Get(protocol.HeaderTraceparent), err)
		}
		span, ok := replays[traceID]
		if !ok {
			t.Fatalf("%s: its traceparent names trace %s, which has no replay span", id, traceID)
		}
		if span.Parent().IsValid() {
			t.Errorf("%s: the replay span has a parent; it should root a trace of its own", id)
		}
		linked := map[string]bool{}
		for _, l := range span.Links() {
			linked[l.SpanContext.SpanID().String()] = true
		}
		if !linked[batch.SpanContext().SpanID().String()] || !linked["00f067aa0ba902b7"] {
			t.Errorf("%s: replay span links %v, want the publish batch and the original delivery", id, linked)
		}
	}
	if len(replays) != 3 {
		t.Fatalf("%d replay traces, want one per message (3)", len(replays))
	}
}

// Sampled out, a replay still carries its traceparent (not sampled), so the consumers, parent
// based, follow execute's decision instead of starting traces of their own.
func TestASampledOutExecuteStillTellsTheConsumersNotToSample(t *testing.T) {
	t.Parallel()
	e := exectest.New(t, exectest.Options{})
	m := e.Shadowed(2, "job-exec-sampled-out")
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithSampler(sdktrace.NeverSample()))
	_, err := execute(e, options(m, func(o *executor.Options) {
		o.SettleTimeout = 300 * time.Millisecond
		o.TracerProvider = tp
	}))
	if _, ok := errors.AsType[*executor.StopError](err); !ok {
		t.Fatalf("want a stall without a consumer, got %v", err)
	}
	if n := len(rec.Ended()); n != 0 {
		t.Fatalf("%d spans recorded by a sampler that samples nothing", n)
	}
	for seq := uint64(1); seq <= 2; seq++ {
		if tp := e.StreamMessage(seq).Header.Get(protocol.HeaderTraceparent); len(tp) != 55 || tp[53:] != "00" {
			t.Errorf("message %d: traceparent %q, want one whose flags say not sampled", seq, tp)
		}
	}
}
