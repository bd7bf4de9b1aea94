package idempotency_test

import (
	"net/http"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// Each request through the middleware is a span with its route and its answer; the key is named
// by the short form of its keyed hash, never raw, and no body field shows.
func TestEachKeyedRequestIsASpanWithItsAnswerAndNoRawKey(t *testing.T) {
	t.Parallel()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	a := newAPI(t, apiOptions{tracer: tp})
	const key = "key-8d1f6b2a-raw"
	if got := a.post("demo-alice", key, order); got.status != http.StatusCreated {
		t.Fatalf("first request: %d %s", got.status, got.body)
	}
	if got := a.post("demo-alice", key, order); got.status != http.StatusCreated {
		t.Fatalf("retry: %d %s", got.status, got.body)
	}
	changed := order
	changed.AmountCents++
	if got := a.post("demo-alice", key, changed); got.status != http.StatusUnprocessableEntity {
		t.Fatalf("changed body: %d %s", got.status, got.body)
	}

	spans := rec.Ended()
	var outcomes []string
	for _, s := range spans {
		if s.Name() != "idempotency POST /v1/charges" {
			continue
		}
		values := map[string]string{}
		for _, kv := range s.Attributes() {
			values[string(kv.Key)] = kv.Value.String()
			for _, raw := range []string{key, order.OrderID, order.Customer} {
				if strings.Contains(kv.Value.String(), raw) {
					t.Errorf("span attribute %s carries %q", kv.Key, raw)
				}
			}
		}
		if values["replayctl.key.hash"] == "" || values["replayctl.route"] != "POST /v1/charges" {
			t.Errorf("span attributes %v: want the route and the key's hash", values)
		}
		outcomes = append(outcomes, values["replayctl.outcome"])
		if values["replayctl.outcome"] == "mismatch" && s.Status().Code != codes.Error {
			t.Errorf("a reused key's span is %v, want an error", s.Status().Code)
		}
	}
	if strings.Join(outcomes, ",") != "handled,replayed,mismatch" {
		t.Fatalf("span outcomes %v, want handled, replayed, mismatch", outcomes)
	}
}
