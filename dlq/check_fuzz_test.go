package dlq_test

import (
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/replayctl/replayctl/dlq"
	"github.com/replayctl/replayctl/fingerprint"
	"github.com/replayctl/replayctl/protocol"
)

// FuzzCheck feeds the check shadow and execute make of a DLQ message whose Event-Id header and payload
// are arbitrary, against a planned target: it must never panic; it accepts exactly the planned
// event ID with the planned payload; and a refusal names the header or the change, says what to
// do, and stays one readable line however long or binary the foreign value is. Seeds are in
// testdata/fuzz/FuzzCheck.
func FuzzCheck(f *testing.F) {
	f.Fuzz(func(t *testing.T, planned, got string, payload []byte, changed bool) {
		target := dlq.Planned{EventID: planned, StreamSeq: 42, PayloadHash: fingerprint.Payload(payload)}
		if changed {
			target.PayloadHash = fingerprint.Payload(append([]byte("x"), payload...))
		}
		h := nats.Header{protocol.HeaderEventID: {got}}
		why := dlq.Check(target, protocol.HeaderEventID, h, payload)
		switch {
		case got != planned:
			if !strings.Contains(why, protocol.HeaderEventID) || !strings.Contains(why, "plan again") {
				t.Fatalf("another event ID %q for %q: %q, want the header named and what to do", got, planned, why)
			}
		case changed:
			if !strings.Contains(why, "changed since plan") || !strings.Contains(why, "plan again") {
				t.Fatalf("a changed payload: %q, want it said and what to do", why)
			}
		case why != "":
			t.Fatalf("the planned event with its planned payload was refused: %q", why)
		}
		if why == "" {
			return
		}
		if strings.ContainsAny(why, "\r\n") {
			t.Fatalf("the refusal is not one line: %q", why)
		}
		// The foreign value is quoted clipped (120 runes, each escaped in at most 10 bytes).
		if limit := 1500 + 10*len(planned); len(why) > limit {
			t.Fatalf("the refusal is %d bytes for a %d-byte foreign value, want at most %d", len(why), len(got), limit)
		}
	})
}
