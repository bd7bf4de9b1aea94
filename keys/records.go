package keys

import (
	"context"
	"fmt"
	"time"

	"github.com/replayctl/replayctl/apikey"
	"github.com/replayctl/replayctl/ledger"
)

// RecordView is one record in the verbs' output: hashes, state and dates, never a body.
type RecordView struct {
	Route       string            `json:"route"`
	ScopeHash   string            `json:"scopeHash"`
	KeyHash     string            `json:"keyHash"`
	ClientHash  string            `json:"clientHash"`
	OperationID string            `json:"operationId"`
	State       apikey.State      `json:"state"`
	Resolution  apikey.Resolution `json:"resolution,omitempty"`
	RequestHash string            `json:"requestHash"`
	// RequestHashAlg names the fingerprint algorithm of RequestHash.
	RequestHashAlg string `json:"requestHashAlg"`
	ResponseStatus int    `json:"responseStatus,omitempty"`
	// ResponseStored is whether the sealed response is still kept (until replayUntil).
	ResponseStored bool       `json:"responseStored"`
	ResponseKeyID  string     `json:"responseKeyId,omitempty"`
	ExternalRef    string     `json:"externalRef,omitempty"`
	CallsStarted   int        `json:"callsStarted"`
	Attempts       int        `json:"attempts"`
	LeaseLive      bool       `json:"leaseLive"`
	ReplayUntil    *time.Time `json:"replayUntil,omitempty"`
	EvidenceUntil  *time.Time `json:"evidenceUntil,omitempty"`
	Note           string     `json:"note,omitempty"`
	// NextRetry is what the caller's next retry with the same body gets.
	NextRetry apikey.RetryAnswer `json:"nextRetry"`
	CreatedAt time.Time          `json:"createdAt"`
	UpdatedAt time.Time          `json:"updatedAt"`
}

func viewOf(r apikey.Record) RecordView {
	utc := func(t *time.Time) *time.Time {
		if t == nil {
			return nil
		}
		u := t.UTC()
		return &u
	}
	return RecordView{Route: r.Route, ScopeHash: r.ScopeHash, KeyHash: r.KeyHash, ClientHash: r.ClientHash,
		OperationID: apikey.OperationID(r.ScopeHash, r.KeyHash), State: r.State, Resolution: r.Resolution,
		RequestHash: r.RequestHash, RequestHashAlg: r.RequestHashAlg, ResponseStatus: r.ResponseStatus,
		ResponseStored: r.ResponseSealed != nil, ResponseKeyID: r.ResponseKeyID, ExternalRef: r.ExternalRef,
		CallsStarted: r.CallsStarted, Attempts: r.Attempts, LeaseLive: r.LeaseLive, ReplayUntil: utc(r.ReplayUntil),
		EvidenceUntil: utc(r.EvidenceUntil), Note: r.Note, NextRetry: r.NextRetry(), CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC()}
}

// Lookup names the records of one key: the raw key (hashed with Secret) or its hash, on one
// route or every route.
type Lookup struct {
	Route   string
	RawKey  string
	Secret  []byte
	KeyHash string
	// ScopeHash, when set, keeps the record of that scope only.
	ScopeHash string
}

func (l Lookup) keyHash() (string, error) {
	switch {
	case l.KeyHash != "" && l.RawKey != "":
		return "", fmt.Errorf("%w: name the key once: --key or --key-hash", ErrBadRequest)
	case l.KeyHash != "":
		if err := apikey.ValidKeyHash(l.KeyHash); err != nil {
			return "", fmt.Errorf("%w: --key-hash %q: %v", ErrBadRequest, l.KeyHash, err)
		}
		return l.KeyHash, nil
	case l.RawKey == "":
		return "", fmt.Errorf("%w: name the key: --key K (hashed with the service's secret) or --key-hash H (from a log line or `keys uncertain`)", ErrBadRequest)
	case len(l.Secret) == 0:
		return "", fmt.Errorf("%w: --key needs the service's key secret to hash it: --key-secret-file FILE or REPLAYCTL_KEY_SECRET_FILE (or pass --key-hash)", ErrBadRequest)
	}
	key, err := apikey.ParseKey(l.RawKey)
	if err != nil {
		return "", fmt.Errorf("%w: --key: %v (the middleware refuses such a key with 400, so no record holds it)", ErrBadRequest, err)
	}
	return apikey.HashKey(l.Secret, key), nil
}

// Show returns the records of the key l names, on every scope (tenant and principal) it was used
// under; ErrNotFound when there is none.
func Show(ctx context.Context, store Records, l Lookup) ([]RecordView, error) {
	recs, err := find(ctx, store, l)
	if err != nil {
		return nil, err
	}
	out := make([]RecordView, 0, len(recs))
	for _, r := range recs {
		out = append(out, viewOf(r))
	}
	return out, nil
}

func find(ctx context.Context, store Records, l Lookup) ([]apikey.Record, error) {
	keyHash, err := l.keyHash()
	if err != nil {
		return nil, err
	}
	if l.ScopeHash != "" {
		if err := apikey.ValidScopeHash(l.ScopeHash); err != nil {
			return nil, fmt.Errorf("%w: --scope-hash %q: %v", ErrBadRequest, l.ScopeHash, err)
		}
	}
	if err := store.CheckSchema(ctx); err != nil {
		return nil, err
	}
	recs, err := store.APIKeysOfKey(ctx, keyHash, l.Route)
	if err != nil {
		return nil, err
	}
	kept := recs[:0]
	for _, r := range recs {
		if l.ScopeHash == "" || r.ScopeHash == l.ScopeHash {
			kept = append(kept, r)
		}
	}
	if len(kept) == 0 {
		where := "any route"
		if l.Route != "" {
			where = "route " + l.Route
		}
		return nil, fmt.Errorf("%w: key %s on %s (a key from another service's secret, or pruned past its evidence window?)", ErrNotFound, apikey.ShortHash(keyHash), where)
	}
	return kept, nil
}

// Uncertain lists up to limit records awaiting a decision, oldest first.
func Uncertain(ctx context.Context, store Records, route string, limit int) ([]RecordView, error) {
	if err := store.CheckSchema(ctx); err != nil {
		return nil, err
	}
	if err := checkRoute(ctx, store, route); err != nil {
		return nil, err
	}
	recs, err := store.APIKeysUncertain(ctx, route, limit)
	if err != nil {
		return nil, err
	}
	out := make([]RecordView, 0, len(recs))
	for _, r := range recs {
		out = append(out, viewOf(r))
	}
	return out, nil
}

// ResolveRequest is a person's decision about one uncertain record.
type ResolveRequest struct {
	Lookup
	As          apikey.Resolution
	ExternalRef string
	Note        string
	Actor       string
	// Confirm, when set, is shown the record and decides; nil means confirmed (--yes).
	Confirm func(RecordView) (bool, error)
}

// Resolve settles the one uncertain record the request names as a person decided, with an audit
// entry (keys.resolved) in the same transaction. It returns the record as it was.
func Resolve(ctx context.Context, store Records, req ResolveRequest) (*RecordView, error) {
	if req.As != apikey.ResolutionHappened && req.As != apikey.ResolutionNotHappened {
		return nil, fmt.Errorf("%w: --as must be happened or not-happened, got %q", ErrBadRequest, req.As)
	}
	if len(req.Note) < 10 {
		return nil, fmt.Errorf("%w: --note must say what you checked and where (at least 10 characters)", ErrBadRequest)
	}
	recs, err := find(ctx, store, req.Lookup)
	if err != nil {
		return nil, err
	}
	if len(recs) > 1 {
		return nil, fmt.Errorf("%w: the key has %d records (one per caller and route): pick one with --route and --scope-hash (see `replayctl keys show`)", ErrBadRequest, len(recs))
	}
	view := viewOf(recs[0])
	if view.State != apikey.StateUncertain && !(view.State == apikey.StateProcessing && !view.LeaseLive && view.CallsStarted > 0) {
		return &view, fmt.Errorf("%w: it is %s", ErrNotUncertain, view.State)
	}
	if req.Confirm != nil {
		ok, err := req.Confirm(view)
		if err != nil {
			return &view, err
		}
		if !ok {
			return &view, fmt.Errorf("%w: pass --yes to resolve without a terminal", ErrNotConfirmed)
		}
	}
	policies, err := store.RetentionPoliciesList(ctx, apikey.PolicyRoute, view.Route)
	if err != nil {
		return &view, err
	}
	evidence := 400 * 24 * time.Hour
	if len(policies) == 1 {
		evidence = policies[0].EvidenceWindow
	}
	settled, err := store.APIKeysResolve(ctx, apikey.Settlement{Key: apikey.Key{ScopeHash: view.ScopeHash, KeyHash: view.KeyHash},
		Resolution: req.As, ExternalRef: req.ExternalRef, Note: req.Note, EvidenceWindow: evidence},
		ledger.AuditEntry{Actor: req.Actor, Action: "keys.resolved", Details: map[string]any{
			"route": view.Route, "scopeHash": view.ScopeHash, "keyHash": view.KeyHash, "as": string(req.As),
			"externalRef": req.ExternalRef, "note": req.Note}})
	if err != nil {
		return &view, err
	}
	if !settled {
		return &view, fmt.Errorf("%w: it changed while you decided (a look-up settled it?); run `replayctl keys show` again", ErrNotUncertain)
	}
	return &view, nil
}
