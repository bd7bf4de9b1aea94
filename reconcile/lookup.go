package reconcile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/replayctl/replayctl/internal/clip"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/protocol"
)

// maxQuoted bounds the text a report quotes from a reply: it is the consumer's, and goes to the
// ledger (review_note) and the audit log.
const maxQuoted = 300

// asker sends look-up requests for one consumer.
type asker struct {
	nc       *nats.Conn
	consumer string
	subject  string
	timeout  time.Duration
}

// answer is one look-up's outcome: a reply, or why there is none (err, row untouched).
type answer struct {
	reply protocol.ReconcileReply
	err   string
}

// ask sends one look-up request for row. It returns an error only when the run cannot go on:
// ctx ended, no responder is subscribed, or the connection failed.
func (a *asker) ask(ctx context.Context, row ledger.UncertainRow) (answer, error) {
	req := protocol.ReconcileRequest{Consumer: a.consumer, EventID: row.EventID, EffectVersion: row.EffectVersion,
		RequestHash: row.RequestHash, RequestHashAlg: row.RequestHashAlg, ExternalRefs: []protocol.Effect{},
		CallsStarted: row.CallsStarted, JobID: row.JobID}
	// The SDK writes external_refs as a list of effects; a row whose list does not read as one is
	// still asked about, without it, and keeps what it holds.
	if err := json.Unmarshal(row.ExternalRefs, &req.ExternalRefs); err != nil || req.ExternalRefs == nil {
		req.ExternalRefs = []protocol.Effect{}
	}
	data, err := json.Marshal(req)
	if err != nil {
		return answer{}, fmt.Errorf("encode the look-up request for event %q: %w", row.EventID, err)
	}
	reqCtx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	msg, err := a.nc.RequestWithContext(reqCtx, a.subject, data)
	switch {
	case err == nil:
		return parseReply(row.EventID, msg.Data), nil
	case ctx.Err() != nil:
		return answer{}, ctx.Err()
	case errors.Is(err, nats.ErrNoResponders):
		return answer{}, fmt.Errorf("%w for consumer %s: nothing is subscribed to %s; run the consumer with a look-up "+
			"(consumer.Config.Lookup, docs/protocol.md \"Look-up request and reply\") and try again; nothing was changed",
			ErrNoResponder, a.consumer, a.subject)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout):
		return answer{err: fmt.Sprintf("no reply within %s", a.timeout)}, nil
	default:
		return answer{}, fmt.Errorf("look-up request for consumer %s event %q on %s: %w; check --nats-url and that the "+
			"NATS server is up; nothing was changed", a.consumer, row.EventID, a.subject, err)
	}
}

// parseReply checks a reply against the protocol. A reply that breaks it is no answer: acting on
// it could reconcile a row on a mixed-up or garbled verdict.
func parseReply(eventID string, data []byte) answer {
	var rep protocol.ReconcileReply
	if err := json.Unmarshal(data, &rep); err != nil {
		return answer{err: "the reply is not a look-up reply (docs/protocol.md): " + clip.Runes(err.Error(), maxQuoted)}
	}
	if rep.EventID != eventID {
		return answer{err: fmt.Sprintf("the reply is for event %q, not %q: the responder mixed up requests", clip.Runes(rep.EventID, 64), eventID)}
	}
	switch rep.Verdict {
	case protocol.VerdictHappened, protocol.VerdictNotHappened, protocol.VerdictUnknown:
	default:
		return answer{err: fmt.Sprintf("the reply has verdict %q; the protocol knows %s, %s and %s", clip.Runes(rep.Verdict, 32),
			protocol.VerdictHappened, protocol.VerdictNotHappened, protocol.VerdictUnknown)}
	}
	rep.Detail = clip.Runes(rep.Detail, maxQuoted)
	return answer{reply: rep}
}
