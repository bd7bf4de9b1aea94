package consumer_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/replayctl/replayctl/consumer"
	"github.com/replayctl/replayctl/internal/tracing"
	"github.com/replayctl/replayctl/protocol"
)

// tracedConsumer is a consumer whose spans a recorder keeps.
func (e *env) tracedConsumer() (*consumer.Consumer, *tracetest.SpanRecorder) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	e.t.Cleanup(func() { _ = tp.Shutdown(e.ctx) })
	return e.newConsumer(func(cfg *consumer.Config) { cfg.TracerProvider = tp }), rec
}

func spanNamed(t *testing.T, spans []sdktrace.ReadOnlySpan, name string) sdktrace.ReadOnlySpan {
	t.Helper()
	for _, s := range spans {
		if s.Name() == name {
			return s
		}
	}
	names := []string{}
	for _, s := range spans {
		names = append(names, s.Name())
	}
	t.Fatalf("no span %q among %v", name, names)
	return nil
}

func attr(s sdktrace.ReadOnlySpan, key string) string {
	for _, a := range s.Attributes() {
		if string(a.Key) == key {
			return a.Value.String()
		}
	}
	return ""
}

// noRawValues fails when any span names the event or the payload: spans go to a tracing backend
// that is not the ledger's, with other readers.
func noRawValues(t *testing.T, spans []sdktrace.ReadOnlySpan, raw ...string) {
	t.Helper()
	for _, s := range spans {
		values := []string{s.Name(), s.Status().Description}
		for _, a := range s.Attributes() {
			values = append(values, a.Value.String())
		}
		for _, ev := range s.Events() {
			values = append(values, ev.Name)
			for _, a := range ev.Attributes {
				values = append(values, a.Value.String())
			}
		}
		for _, v := range values {
			for _, r := range raw {
				if strings.Contains(v, r) {
					t.Errorf("span %q carries %q: %q", s.Name(), r, v)
				}
			}
		}
	}
}

var (
	executeSpan  = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	originalSpan = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
)

// A replayed message joins execute's trace (its traceparent) and links the delivery that
// dead-lettered it (Replay-Original-Traceparent); the claim, the call and the completion are
// its children, and the event is named by its hash only.
func TestATracedReplayJoinsExecutesTraceAndLinksTheOriginalDelivery(t *testing.T) {
	e := newEnv(t)
	c, rec := e.tracedConsumer()
	cons := e.durable(c)
	e.register(2, "executing", "job-7")
	h := replay("job-7", 2, false)
	h[protocol.HeaderTraceparent] = executeSpan
	h[protocol.HeaderReplayOriginalTraceparent] = originalSpan
	e.publish("order-e1", orderJSON("acct-1", 250), h)
	e.processNext(c, cons, consumer.OutcomeCompleted)

	spans := rec.Ended()
	deliver := spanNamed(t, spans, "deliver billing")
	if got := deliver.Parent().TraceID().String(); got != "0af7651916cd43dd8448eb211c80319c" || deliver.Parent().SpanID().String() != "b7ad6b7169203331" {
		t.Errorf("delivery span's parent %s/%s, want execute's replay span", got, deliver.Parent().SpanID())
	}
	if links := deliver.Links(); len(links) != 1 || links[0].SpanContext.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Errorf("delivery span links %+v, want the original delivery's trace", links)
	}
	for key, want := range map[string]string{"replayctl.outcome": "completed", "replayctl.job.id": "job-7",
		"replayctl.effect_version": "2", "replayctl.event_id.hash": tracing.EventIDHash("order-e1"), "replayctl.consumer": "billing"} {
		if got := attr(deliver, key); got != want {
			t.Errorf("delivery span %s = %q, want %q", key, got, want)
		}
	}
	for _, name := range []string{"claim", "effect charge", "complete"} {
		if s := spanNamed(t, spans, name); s.Parent().SpanID() != deliver.SpanContext().SpanID() {
			t.Errorf("span %q is not the delivery's child", name)
		}
	}
	noRawValues(t, spans, "order-e1", "acct-1", secret)
}

// The fault paths show on the span: an external call whose outcome is unknown fails the call's
// span and the delivery's with "uncertain".
func TestAnUncertainCallFailsTheDeliverySpan(t *testing.T) {
	e := newEnv(t)
	c, rec := e.tracedConsumer()
	cons := e.durable(c)
	e.p.failWith(fmt.Errorf("read tcp: i/o timeout: %w", consumer.ErrOutcomeUnknown))
	e.publish("order-e2", orderJSON("acct-2", 100), nil)
	e.processNext(c, cons, consumer.OutcomeUncertain)

	spans := rec.Ended()
	for _, name := range []string{"deliver billing", "effect charge"} {
		s := spanNamed(t, spans, name)
		if s.Status().Code != codes.Error || !strings.HasPrefix(s.Status().Description, "uncertain") {
			t.Errorf("span %q status %v %q, want error: uncertain", name, s.Status().Code, s.Status().Description)
		}
		found := false
		for _, ev := range s.Events() {
			found = found || ev.Name == "uncertain"
		}
		if !found {
			t.Errorf("span %q has no uncertain event: %+v", name, s.Events())
		}
	}
	noRawValues(t, spans, "order-e2", "acct-2", secret)
}

// A dead letter carries the traceparent of the delivery that gave up, whatever the case of the
// producer's header (NATS keeps it as sent): a replay links to the exact failed attempt.
func TestADeadLetterCarriesTheFailedDeliverysTraceparent(t *testing.T) {
	e := newEnv(t)
	c, rec := e.tracedConsumer()
	cons := e.durable(c)
	e.p.failWith(consumer.NotExecuted(errors.New("connection refused")))
	msg := nats.NewMsg(orderSubject)
	msg.Data = []byte(orderJSON("acct-3", 100))
	msg.Header.Set(protocol.HeaderEventID, "order-e3")
	msg.Header["traceparent"] = []string{originalSpan}
	if _, err := e.nats.JS.PublishMsg(e.ctx, msg); err != nil {
		t.Fatal(err)
	}
	e.processNext(c, cons, consumer.OutcomeRetrying)
	e.processNext(c, cons, consumer.OutcomeRetrying)
	e.processNext(c, cons, consumer.OutcomeDeadLettered)

	var last sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == "deliver billing" {
			if s.Parent().TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" {
				t.Errorf("delivery %s is not in the producer's trace", s.SpanContext().SpanID())
			}
			last = s
		}
	}
	if last == nil || attr(last, "replayctl.outcome") != "dead_lettered" {
		t.Fatalf("the last delivery span is %v, want the dead-lettering one", last)
	}
	dead := e.lastDeadLetter()
	want := fmt.Sprintf("00-%s-%s-01", last.SpanContext().TraceID(), last.SpanContext().SpanID())
	if got := dead.Header.Get(protocol.HeaderTraceparent); got != want {
		t.Fatalf("dead letter traceparent %q, want the dead-lettering delivery's %q", got, want)
	}
}

// Without a tracer provider that records, the dead letter keeps the producer's traceparent as it
// came: a replay can still link to the original trace.
func TestAnUntracedConsumerDeadLettersWithTheProducersTraceparent(t *testing.T) {
	e := newEnv(t)
	c := e.newConsumer(func(cfg *consumer.Config) { cfg.TracerProvider = noop.NewTracerProvider() })
	cons := e.durable(c)
	e.publish("", `{"n":1}`, map[string]string{protocol.HeaderTraceparent: originalSpan})
	e.processNext(c, cons, consumer.OutcomeInvalid)
	dead := e.lastDeadLetter()
	if got := dead.Header.Get(protocol.HeaderTraceparent); got != originalSpan {
		t.Fatalf("dead letter traceparent %q, want the producer's %q", got, originalSpan)
	}
}

// lastDeadLetter is the DLQ's newest message.
func (e *env) lastDeadLetter() *jetstream.RawStreamMsg {
	e.t.Helper()
	dlq, err := e.nats.JS.Stream(e.ctx, "DLQ")
	if err != nil {
		e.t.Fatal(err)
	}
	dead, err := dlq.GetLastMsgForSubject(e.ctx, dlqSubject)
	if err != nil {
		e.t.Fatal(err)
	}
	return dead
}
