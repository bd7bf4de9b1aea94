package dlq

import (
	"fmt"

	"github.com/nats-io/nats.go"

	"github.com/replayctl/replayctl/fingerprint"
	"github.com/replayctl/replayctl/internal/clip"
)

// maxQuoted bounds how much of a foreign header value a refusal quotes.
const maxQuoted = 120

// Planned is a target as plan recorded it, to match against the DLQ message now at its sequence.
type Planned struct {
	EventID   string
	StreamSeq uint64
	// PayloadHash is the payload fingerprint at plan time; empty skips the payload check (targets
	// planned before the ledger stored it).
	PayloadHash string
}

// Check says why a DLQ message cannot stand for target t (empty when it can): the stream
// sequence must still hold the planned event, under the header plan read its ID from, with the
// planned payload.
func Check(t Planned, eventIDHeader string, header nats.Header, data []byte) string {
	if got := header.Get(eventIDHeader); got != t.EventID {
		return fmt.Sprintf("the DLQ message at stream sequence %d carries %s %q, not %q: the stream was purged or recreated since plan; plan again",
			t.StreamSeq, eventIDHeader, clip.Runes(got, maxQuoted), t.EventID)
	}
	if t.PayloadHash != "" && !fingerprint.PayloadMatches(data, t.PayloadHash) {
		return fmt.Sprintf("the DLQ message at stream sequence %d changed since plan (payload %s, planned %s); plan again",
			t.StreamSeq, fingerprint.Payload(data), t.PayloadHash)
	}
	return ""
}
