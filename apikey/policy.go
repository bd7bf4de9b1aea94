package apikey

import (
	"fmt"
	"time"
)

// PolicyKind says whose retention a policy is: an API route's or an event consumer's.
type PolicyKind string

// The kinds of retention policy.
const (
	PolicyRoute    PolicyKind = "route"
	PolicyConsumer PolicyKind = "consumer"
)

// Delays are what a route's product contract says about the time around one intent; the windows
// are derived from them (Derive), so retention is a recorded decision, not a constant in code.
type Delays struct {
	// ClientRetry is the longest a client keeps retrying one request (its backoff's total).
	ClientRetry time.Duration `json:"clientRetry"`
	// OfflineResend is the longest an app's offline queue may hold a request before sending it.
	OfflineResend time.Duration `json:"offlineResend"`
	// Inquiry is how long after the last possible resend a dispute or support inquiry may ask
	// whether the request ran (a card chargeback: about 120 days).
	Inquiry time.Duration `json:"inquiry"`
}

// Policy is one route's or consumer's retention, as registered in the ledger.
type Policy struct {
	Kind PolicyKind `json:"kind"`
	// Name is the route ("POST /v1/charges") or the consumer.
	Name   string `json:"name"`
	Delays Delays `json:"delays"`
	// ReplayWindow is how long the stored response is given to a retry (replay_until).
	ReplayWindow time.Duration `json:"-"`
	// EvidenceWindow is how long the record proves the request ran (evidence_until).
	EvidenceWindow time.Duration `json:"-"`
	// TombstoneWindow is how long past evidence_until a consumer's tombstone is kept; zero for
	// routes and for consumers that registered none (prune then keeps its default).
	TombstoneWindow time.Duration `json:"-"`
	// Irreversible routes (payments, refunds, permission changes) look an expired key up before
	// running it; a reversible route with ExpiredIsNew treats it as a new request.
	Irreversible bool      `json:"irreversible"`
	ExpiredIsNew bool      `json:"expiredIsNew"`
	RegisteredBy string    `json:"registeredBy,omitempty"`
	RegisteredAt time.Time `json:"registeredAt,omitzero"`
}

// minReplayMargin is added to the longest resend so a retry at the edge of the contract still
// finds the response: clocks differ and queues flush late.
const minReplayMargin = time.Hour

// Derive returns the windows of d: the replay window is the longest resend (client retries or an
// offline queue) plus a quarter of it, at least an hour; the evidence window adds the inquiry
// delay to the replay window, because an inquiry may come that long after the last resend.
func Derive(d Delays) (replay, evidence time.Duration, err error) {
	if d.ClientRetry < 0 || d.OfflineResend < 0 || d.Inquiry < 0 {
		return 0, 0, fmt.Errorf("retention delays must not be negative: %+v", d)
	}
	longest := max(d.ClientRetry, d.OfflineResend)
	if longest == 0 {
		return 0, 0, fmt.Errorf("retention delays: declare ClientRetry or OfflineResend, the longest a client may resend one request")
	}
	replay = longest + max(longest/4, minReplayMargin)
	return replay, replay + d.Inquiry, nil
}
