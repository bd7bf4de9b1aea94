package consumer

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/replayctl/replayctl/internal/clip"
	"github.com/replayctl/replayctl/protocol"
)

// Bounds of the look-up responder. A look-up asks a provider (over the network) about one event,
// so a handful at once is plenty and keeps `replayctl reconcile --concurrency` from flooding it.
const (
	lookupConcurrency = 8
	lookupTimeout     = 30 * time.Second
	maxLookupDetail   = 500
)

// LookupRequest is one uncertain ledger row `replayctl reconcile` asks about. It carries no
// payload: the consumer finds the business object from the event ID in its own records.
type LookupRequest struct {
	EventID       string
	EffectVersion int
	// JobID is the replay job that wrote the row; empty for a live message.
	JobID string
	// RequestHash is the row's request fingerprint, to match against the consumer's own records.
	RequestHash string
	// ExternalRefs are the calls the row recorded so far; a call whose outcome is unknown is not
	// among them (the row's last_error names it).
	ExternalRefs []protocol.Effect
	// CallsStarted counts the calls begun under the row's last lease.
	CallsStarted int
}

// LookupResult is what the provider says about the event's external effect.
type LookupResult struct {
	// Verdict is protocol.VerdictHappened only when the event needs nothing more (the row is then
	// reconciled and never replayed); protocol.VerdictNotHappened when the provider has no trace of
	// it; protocol.VerdictUnknown otherwise. For an uncertain row the last two leave it for manual
	// review; for a delivery whose evidence expired, not_happened lets it be processed.
	Verdict string
	// ExternalRefs are the provider's references found (charge IDs), stored on a reconciled row.
	ExternalRefs []protocol.Effect
	// Detail says how the look-up decided: IDs and counts, no payload or personal data.
	Detail string
}

// LookupFunc asks the provider whether an uncertain event's external effect exists. It must not
// write anything: a look-up is a read. An error is answered as VerdictUnknown with the error as
// the detail, so the row stays for manual review.
type LookupFunc func(ctx context.Context, req LookupRequest) (LookupResult, error)

// Lookup answers one look-up request with Config.Lookup, given at most 30 s. A malformed request,
// one for another consumer, a failing or panicking look-up and a verdict outside the protocol are
// all answered VerdictUnknown with the reason as detail: the requester then changes nothing but the
// review marker, and never reconciles on a doubtful answer.
func (c *Consumer) Lookup(ctx context.Context, msg *nats.Msg) protocol.ReconcileReply {
	var req protocol.ReconcileRequest
	unknown := func(format string, args ...any) protocol.ReconcileReply {
		return protocol.ReconcileReply{EventID: req.EventID, Verdict: protocol.VerdictUnknown, ExternalRefs: []protocol.Effect{},
			Detail: clip.Stored(fmt.Sprintf(format, args...), maxLookupDetail)}
	}
	if err := json.Unmarshal(msg.Data, &req); err != nil {
		return unknown("the request is not a look-up request (docs/protocol.md): %v", err)
	}
	switch {
	case req.Consumer != c.cfg.Name:
		return unknown("the request is for consumer %q, this responder serves %s", clip.Stored(req.Consumer, 64), c.cfg.Name)
	case protocol.ValidateEventID(req.EventID) != nil:
		return unknown("the request's eventId is invalid: %v", protocol.ValidateEventID(req.EventID))
	case req.EffectVersion < 0:
		return unknown("the request's effectVersion %d is negative", req.EffectVersion)
	}
	if c.cfg.Lookup == nil {
		return unknown("consumer %s has no look-up configured", c.cfg.Name)
	}
	ctx, cancel := context.WithTimeout(ctx, lookupTimeout)
	defer cancel()
	res, err := c.runLookup(ctx, LookupRequest{EventID: req.EventID, EffectVersion: req.EffectVersion, JobID: req.JobID,
		RequestHash: req.RequestHash, ExternalRefs: req.ExternalRefs, CallsStarted: req.CallsStarted})
	if err != nil {
		return unknown("look-up failed: %v", err)
	}
	switch res.Verdict {
	case protocol.VerdictHappened, protocol.VerdictNotHappened, protocol.VerdictUnknown:
	default:
		return unknown("the look-up answered verdict %q; the protocol knows %s, %s and %s", clip.Stored(res.Verdict, 32),
			protocol.VerdictHappened, protocol.VerdictNotHappened, protocol.VerdictUnknown)
	}
	refs := res.ExternalRefs
	if refs == nil {
		refs = []protocol.Effect{}
	}
	return protocol.ReconcileReply{EventID: req.EventID, Verdict: res.Verdict, ExternalRefs: refs,
		Detail: clip.Stored(res.Detail, maxLookupDetail)}
}

// runLookup calls the look-up, turning a panic into an error as runHandler does for handlers.
func (c *Consumer) runLookup(ctx context.Context, req LookupRequest) (res LookupResult, err error) {
	defer func() {
		if r := recover(); r != nil {
			c.log.Error("look-up panicked", "consumer", c.cfg.Name, "event_id", req.EventID,
				"panic", clip.Stored(fmt.Sprint(r), maxReasonBytes), "stack", string(debug.Stack()))
			err = fmt.Errorf("the look-up panicked: %s", clip.Stored(fmt.Sprint(r), maxReasonBytes))
		}
	}()
	return c.cfg.Lookup(ctx, req)
}

// ServeLookup answers look-up requests on protocol.ReconcileSubject(Name) in queue group
// protocol.ReconcileQueueGroup, a few at once, until ctx is done or the returned stop is called
// (it drains, waits for the answers in flight, and may be called more than once). Run calls it
// when Config.Lookup is set; a service that does not Run may call it itself. Without a Lookup it
// returns an error matching ErrBadConfig and subscribes nothing, so `replayctl reconcile` finds
// no responder and changes nothing.
func (c *Consumer) ServeLookup(ctx context.Context) (stop func(), err error) {
	subject := protocol.ReconcileSubject(c.cfg.Name)
	if c.cfg.Lookup == nil {
		return nil, fmt.Errorf("%w: Lookup: required to answer look-ups on %s", ErrBadConfig, subject)
	}
	return c.serveRequests(ctx, subject, protocol.ReconcileQueueGroup, lookupConcurrency, "look-up",
		func(ctx context.Context, msg *nats.Msg) {
			reply := c.Lookup(ctx, msg)
			c.log.Info("look-up answered", "consumer", c.cfg.Name, "event_id", reply.EventID, "verdict", reply.Verdict,
				"refs", len(reply.ExternalRefs))
			c.respond(msg, "look-up", reply.EventID, reply)
		})
}
