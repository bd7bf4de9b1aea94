package dlq_test

import (
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/replayctl/replayctl/dlq"
	"github.com/replayctl/replayctl/fingerprint"
)

func TestCheckSourceRefusesAnotherEventOrAChangedPayload(t *testing.T) {
	payload := []byte(`{"amountCents": 100}`)
	target := dlq.Planned{EventID: "e1", StreamSeq: 7, PayloadHash: fingerprint.Payload(payload)}
	header := nats.Header{"Event-Id": []string{"e1"}}
	if why := dlq.Check(target, "Event-Id", header, []byte(`{ "amountCents" : 100 }`)); why != "" {
		t.Fatalf("the planned message refused: %s", why)
	}
	if why := dlq.Check(target, "Event-Id", nats.Header{"Event-Id": []string{"e2"}}, payload); why == "" {
		t.Fatal("a message for another event accepted")
	}
	if why := dlq.Check(target, "Event-Id", header, []byte(`{"amountCents": 101}`)); why == "" {
		t.Fatal("a changed payload accepted")
	}
	target.PayloadHash = ""
	if why := dlq.Check(target, "Event-Id", header, []byte(`{"amountCents": 101}`)); why != "" {
		t.Fatalf("a target planned without a payload hash refused: %s", why)
	}
}
