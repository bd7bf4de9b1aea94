package ledgerfake

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/replayctl/replayctl/apikey"
	"github.com/replayctl/replayctl/keys"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/ledger/ledgertest"
)

// APIRecords keeps API idempotency records and retention policies in memory: keys.Records, for
// unit tests of keys show, uncertain, resolve and policy, and idempotency.Store (apileases.go).
// Records are seeded with AddAPIKeys (the defaults of ledgertest.InsertAPIKeys) and policies with
// RetentionPoliciesRegister.
type APIRecords struct {
	store
	records  map[apikey.Key]*apiRecord
	policies []apikey.Policy
	daily    []apikey.DailyCount
}

var _ keys.Records = (*APIRecords)(nil)

// apiRecord is a record with its lease's expiry, from which a read judges LeaseLive.
type apiRecord struct {
	apikey.Record
	leaseExpiresAt *time.Time
}

// NewAPIRecords returns a store without records or policies.
func NewAPIRecords() *APIRecords {
	return &APIRecords{records: map[apikey.Key]*apiRecord{}}
}

// AddAPIKeys stores records as ledgertest.InsertAPIKeys writes them.
func (f *APIRecords) AddAPIKeys(records ...ledgertest.APIKey) {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.now()
	for _, k := range records {
		k = k.Defaults()
		updated := now.Add(-k.UpdatedAgo)
		r := &apiRecord{Record: apikey.Record{ScopeHash: k.ScopeHash, KeyHash: k.KeyHash, Route: k.Route, ClientHash: k.ClientHash,
			RequestHash: k.RequestHash, RequestHashAlg: k.RequestHashAlg, State: apikey.State(k.State), ExternalRef: k.ExternalRef,
			CallsStarted: k.CallsStarted, Attempts: 1, CreatedAt: updated, UpdatedAt: updated}}
		if r.State == apikey.StateProcessing {
			expires := now.Add(time.Minute)
			if k.LeaseLapsedAgo > 0 {
				expires = now.Add(-k.LeaseLapsedAgo)
			}
			r.LeaseOwner, r.leaseExpiresAt = "ledgertest", &expires
		}
		f.records[apikey.Key{ScopeHash: k.ScopeHash, KeyHash: k.KeyHash}] = r
	}
}

// RetentionPoliciesRegister stores policies, replacing those of the same kind and name, as the
// middleware and the SDK register theirs.
func (f *APIRecords) RetentionPoliciesRegister(_ context.Context, policies []apikey.Policy) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.now()
	for _, p := range policies {
		p.RegisteredAt = now
		f.policies = slices.DeleteFunc(f.policies, func(have apikey.Policy) bool { return have.Kind == p.Kind && have.Name == p.Name })
		f.policies = append(f.policies, p)
	}
	return nil
}

// CheckSchema always passes: the fake has no schema to be behind.
func (f *APIRecords) CheckSchema(context.Context) error { return nil }

// RetentionPoliciesList returns the policies of kind and name (empty: any), by kind and name.
func (f *APIRecords) RetentionPoliciesList(_ context.Context, kind apikey.PolicyKind, name string) ([]apikey.Policy, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []apikey.Policy
	for _, p := range f.policies {
		if (kind == "" || p.Kind == kind) && (name == "" || p.Name == name) {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b apikey.Policy) int { return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Name, b.Name)) })
	return out, nil
}

// read is r as a read at now returns it: the lease and the replay window judged by the clock.
func (r *apiRecord) read(now time.Time) apikey.Record {
	rec := r.Record
	rec.LeaseLive = r.leaseExpiresAt != nil && r.leaseExpiresAt.After(now)
	rec.LeaseRemaining = 0
	if rec.LeaseLive {
		rec.LeaseRemaining = r.leaseExpiresAt.Sub(now).Truncate(time.Millisecond)
	}
	rec.ReplayOpen = rec.ReplayUntil != nil && rec.ReplayUntil.After(now)
	return rec
}

// awaitingDecision is uncertain, or processing under a lease that lapsed after a call started.
func (r *apiRecord) awaitingDecision(now time.Time) bool {
	return r.State == apikey.StateUncertain || lapsedAfterACall(r, now)
}

// APIKeysOfKey returns every record of keyHash, under any scope, by route and scope hash; route,
// when not empty, keeps that route's only.
func (f *APIRecords) APIKeysOfKey(_ context.Context, keyHash, route string) ([]apikey.Record, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.now()
	var out []apikey.Record
	for _, r := range f.records {
		if r.KeyHash == keyHash && (route == "" || r.Route == route) {
			out = append(out, r.read(now))
		}
	}
	slices.SortFunc(out, func(a, b apikey.Record) int {
		return cmp.Or(cmp.Compare(a.Route, b.Route), cmp.Compare(a.ScopeHash, b.ScopeHash))
	})
	return out, nil
}

// APIKeysUncertain lists up to limit records awaiting a decision of route (empty: every route),
// the oldest change first.
func (f *APIRecords) APIKeysUncertain(_ context.Context, route string, limit int) ([]apikey.Record, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.now()
	var out []apikey.Record
	for _, r := range f.records {
		if (route == "" || r.Route == route) && r.awaitingDecision(now) {
			out = append(out, r.read(now))
		}
	}
	slices.SortFunc(out, func(a, b apikey.Record) int { return a.UpdatedAt.Compare(b.UpdatedAt) })
	return out[:min(len(out), max(limit, 0))], nil
}

// APIKeysResolve settles a record awaiting a decision as s says, with audit (when its Action is
// set); false when the record is not awaiting one.
func (f *APIRecords) APIKeysResolve(_ context.Context, s apikey.Settlement, audit ledger.AuditEntry) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.now()
	r, ok := f.records[s.Key]
	if !ok || !r.awaitingDecision(now) {
		return false, nil
	}
	r.State, r.Resolution, r.Note = apikey.StateReconciled, s.Resolution, s.Note
	if s.ExternalRef != "" {
		r.ExternalRef = s.ExternalRef
	}
	if r.EvidenceUntil == nil {
		until := now.Add(s.EvidenceWindow.Truncate(time.Millisecond))
		r.EvidenceUntil = &until
	}
	if r.ReplayUntil == nil {
		until := now
		r.ReplayUntil = &until
	}
	r.leaseExpiresAt, r.UpdatedAt = nil, now
	if audit.Action != "" {
		audit.At = now
		f.audit = append(f.audit, audit)
	}
	return true, nil
}

// Len is how many records the store holds.
func (f *APIRecords) Len() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.records)
}
