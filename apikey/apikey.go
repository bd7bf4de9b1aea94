// Package apikey holds the types of the ledger's API idempotency records: the HTTP half of the
// design, where an Idempotency-Key binds one API request's intent to its result. The middleware
// (package idempotency) makes them, the ledger stores them and the operator's `replayctl keys`
// verbs read them; this package imports neither, so the ledger can import it (as river's driver
// imports rivertype). An API key and an event's dedup key are different intents: these records
// live in their own table (api_keys), never in effects.
package apikey

import "time"

// State is where an API record stands. received → processing → completed | uncertain;
// completed → expired (a tombstone past evidence_until); uncertain → reconciled.
type State string

// The states of an API record (docs/api.md, "States").
const (
	StateReceived   State = "received"
	StateProcessing State = "processing"
	StateCompleted  State = "completed"
	StateUncertain  State = "uncertain"
	StateExpired    State = "expired"
	StateReconciled State = "reconciled"
)

// Resolution is how an uncertain record was settled, by a look-up or a person.
type Resolution string

// The resolutions of a reconciled record.
const (
	// ResolutionHappened: the external call took effect; a retry is told so, never run again.
	ResolutionHappened Resolution = "happened"
	// ResolutionNotHappened: the call certainly did not take effect; the next retry runs.
	ResolutionNotHappened Resolution = "not_happened"
)

// Record is one api_keys row. Nothing in it is a raw key, a payload field or a plaintext body:
// the scope and the key are hashes, the response is sealed (package seal).
type Record struct {
	// ScopeHash and KeyHash are the primary key: the scope (tenant, principal, method, route
	// template) and the key under the server's HMAC secret.
	ScopeHash string `json:"scopeHash"`
	KeyHash   string `json:"keyHash"`
	// Route is the route template with its method, "POST /v1/charges".
	Route string `json:"route"`
	// ClientHash names the caller (tenant and principal) for per-client figures, hashed.
	ClientHash     string     `json:"clientHash"`
	RequestHash    string     `json:"requestHash"`
	RequestHashAlg string     `json:"requestHashAlg"`
	State          State      `json:"state"`
	Resolution     Resolution `json:"resolution,omitempty"`
	// ResponseStatus is the stored response's HTTP status; 0 when none is stored.
	ResponseStatus int `json:"responseStatus,omitempty"`
	// ResponseKeyID names the keyring key the response was sealed with.
	ResponseKeyID string `json:"responseKeyId,omitempty"`
	// ResponseSealed is the sealed response; nil once replay_until passed (pruned) or when none
	// was stored. Never printed.
	ResponseSealed []byte `json:"-"`
	// ExternalRef is the provider's reference of the call the request made.
	ExternalRef string `json:"externalRef,omitempty"`
	LeaseOwner  string `json:"leaseOwner,omitempty"`
	// LeaseLive and LeaseRemaining are judged by the database clock at read time.
	LeaseLive      bool          `json:"leaseLive"`
	LeaseRemaining time.Duration `json:"-"`
	CallsStarted   int           `json:"callsStarted"`
	Attempts       int           `json:"attempts"`
	ReplayUntil    *time.Time    `json:"replayUntil,omitempty"`
	EvidenceUntil  *time.Time    `json:"evidenceUntil,omitempty"`
	// ReplayOpen is replay_until > now() at read time: the stored response may still be given.
	ReplayOpen bool `json:"replayOpen"`
	// Note is the reason a person gave when resolving, or the look-up's detail.
	Note      string    `json:"note,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
	// Compact says only the key's compact tombstone is left (`keys prune --compact-after`): the
	// key was used and its evidence expired; no fingerprint, reference or response is kept, and
	// there is no row to update (a verdict about it writes a new record).
	Compact bool `json:"-"`
}

// Claim asks for the lease on one record: it is inserted, or taken over when it holds the same
// fingerprint and nobody can have acted on it (received, a lapsed lease before any call started,
// or reconciled as not happened).
type Claim struct {
	ScopeHash, KeyHash, Route, ClientHash string
	RequestHash, RequestHashAlg           string
	Owner                                 string
	Lease                                 time.Duration
}

// Completion settles a claimed record with its sealed response.
type Completion struct {
	ScopeHash, KeyHash, Owner string
	Status                    int
	KeyID                     string
	Sealed                    []byte
	ExternalRef               string
	// ReplayWindow and EvidenceWindow count from the completion, in the database's clock.
	ReplayWindow, EvidenceWindow time.Duration
}

// LateCompletion is what a completion that came after its lease lapsed replaced: the state and
// resolution the record had (uncertain, or reconciled by a look-up or a person).
type LateCompletion struct {
	Was           State
	WasResolution Resolution
}

// Key names one record.
type Key struct{ ScopeHash, KeyHash string }

// DailyCount is one route's figures for one client on one day (UTC), as the middleware counted
// them; `replayctl keys stats` judges them.
type DailyCount struct {
	Route      string    `json:"route"`
	ClientHash string    `json:"clientHash"`
	Day        time.Time `json:"day"`
	Requests   int64     `json:"requests"`
	Replays    int64     `json:"replays"`
	InProgress int64     `json:"inProgress"`
	Mismatches int64     `json:"mismatches"`
	Uncertain  int64     `json:"uncertain"`
}

// Settlement settles one uncertain record, by a look-up or a person.
type Settlement struct {
	Key         Key
	Resolution  Resolution
	ExternalRef string
	// Note says who decided or what the look-up answered; never a payload field.
	Note string
	// EvidenceWindow sets evidence_until from now when the record has none yet.
	EvidenceWindow time.Duration
}
