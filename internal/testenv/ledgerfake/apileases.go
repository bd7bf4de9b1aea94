package ledgerfake

import (
	"context"
	"slices"
	"time"

	"github.com/replayctl/replayctl/apikey"
	"github.com/replayctl/replayctl/idempotency"
	"github.com/replayctl/replayctl/ledger"
)

// APIRecords is also idempotency.Store: the middleware's claim, leases, completions and marks,
// each the compare-and-set its statement in ledger/apikeys.go is. It holds no compact tombstones
// (`keys prune --compact-after`): the tests of a compacted key run on PostgreSQL
// (idempotency/compact_test.go).
var _ idempotency.Store = (*APIRecords)(nil)

const noteLapsed = "the lease lapsed after an external call started"

func (r *apiRecord) leaseLapsed(now time.Time) bool {
	return r.leaseExpiresAt != nil && !r.leaseExpiresAt.After(now)
}

// ownedLive is a processing record whose live lease is owner's.
func (r *apiRecord) ownedLive(owner string, now time.Time) bool {
	return r.State == apikey.StateProcessing && r.LeaseOwner == owner && r.leaseExpiresAt != nil && r.leaseExpiresAt.After(now)
}

// lease gives r to owner for d from now: a claim's or a take-over's processing record.
func (r *apiRecord) lease(owner string, d time.Duration, now time.Time) {
	expires := now.Add(d.Truncate(time.Millisecond))
	r.State, r.LeaseOwner, r.leaseExpiresAt, r.CallsStarted, r.UpdatedAt = apikey.StateProcessing, owner, &expires, 0, now
}

func (f *APIRecords) insert(c apikey.Claim, state apikey.State, note string, now time.Time) *apiRecord {
	r := &apiRecord{Record: apikey.Record{ScopeHash: c.ScopeHash, KeyHash: c.KeyHash, Route: c.Route, ClientHash: c.ClientHash,
		RequestHash: c.RequestHash, RequestHashAlg: c.RequestHashAlg, State: state, Note: note, Attempts: 1,
		CreatedAt: now, UpdatedAt: now}}
	if state == apikey.StateProcessing {
		r.lease(c.Owner, c.Lease, now)
	}
	f.records[apikey.Key{ScopeHash: c.ScopeHash, KeyHash: c.KeyHash}] = r
	return r
}

// APIKeysClaim inserts c's record leased to c.Owner, or takes over one with the same fingerprint
// nobody can have acted on (received, a lease lapsed before any call, reconciled not happened);
// otherwise it returns the record as it stands. A claim won returns an empty record, as the
// ledger's does.
func (f *APIRecords) APIKeysClaim(_ context.Context, c apikey.Claim) (bool, apikey.Record, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.now()
	r, ok := f.records[apikey.Key{ScopeHash: c.ScopeHash, KeyHash: c.KeyHash}]
	if !ok {
		f.insert(c, apikey.StateProcessing, "", now)
		return true, apikey.Record{CreatedAt: now, UpdatedAt: now}, nil
	}
	claimable := r.State == apikey.StateReceived ||
		(r.State == apikey.StateProcessing && r.leaseLapsed(now) && r.CallsStarted == 0) ||
		(r.State == apikey.StateReconciled && r.Resolution == apikey.ResolutionNotHappened)
	if r.RequestHashAlg != c.RequestHashAlg || r.RequestHash != c.RequestHash || !claimable {
		return false, r.read(now), nil
	}
	r.lease(c.Owner, c.Lease, now)
	r.Attempts++
	r.Resolution, r.Note = "", ""
	return true, apikey.Record{CreatedAt: now, UpdatedAt: now}, nil
}

// APIKeysTakeOver leases a record whose replay window closed (completed, expired, or reconciled
// not happened) to c.Owner with c's fingerprint, if it is still as read at seen.
func (f *APIRecords) APIKeysTakeOver(_ context.Context, c apikey.Claim, seen time.Time) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.now()
	r, ok := f.records[apikey.Key{ScopeHash: c.ScopeHash, KeyHash: c.KeyHash}]
	if !ok || !r.UpdatedAt.Equal(seen) || (r.ReplayUntil != nil && r.ReplayUntil.After(now)) ||
		!(r.State == apikey.StateCompleted || r.State == apikey.StateExpired ||
			(r.State == apikey.StateReconciled && r.Resolution == apikey.ResolutionNotHappened)) {
		return false, nil
	}
	r.lease(c.Owner, c.Lease, now)
	r.RequestHash, r.RequestHashAlg, r.Attempts = c.RequestHash, c.RequestHashAlg, r.Attempts+1
	r.ResponseStatus, r.ResponseKeyID, r.ResponseSealed, r.ExternalRef = 0, "", nil, ""
	r.ReplayUntil, r.EvidenceUntil, r.Resolution, r.Note = nil, nil, "", ""
	return true, nil
}

// APIKeysStartOverCompacted inserts c's record leased to c.Owner; false when the key has one.
func (f *APIRecords) APIKeysStartOverCompacted(_ context.Context, c apikey.Claim) (bool, error) {
	return f.insertIfAbsent(c, apikey.StateProcessing, ""), nil
}

// APIKeysReviewCompacted inserts c's record uncertain, with note; false when the key has one.
func (f *APIRecords) APIKeysReviewCompacted(_ context.Context, c apikey.Claim, note string) (bool, error) {
	return f.insertIfAbsent(c, apikey.StateUncertain, note), nil
}

func (f *APIRecords) insertIfAbsent(c apikey.Claim, state apikey.State, note string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.records[apikey.Key{ScopeHash: c.ScopeHash, KeyHash: c.KeyHash}]; ok {
		return false
	}
	f.insert(c, state, note, f.now())
	return true
}

// change applies set to k's record when when holds, and says whether it did.
func (f *APIRecords) change(k apikey.Key, when func(r *apiRecord, now time.Time) bool, set func(r *apiRecord, now time.Time)) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.now()
	r, ok := f.records[k]
	if !ok || !when(r, now) {
		return false
	}
	set(r, now)
	return true
}

// APIKeysCallStarted counts a call the owner of the live lease starts.
func (f *APIRecords) APIKeysCallStarted(_ context.Context, k apikey.Key, owner string) (bool, error) {
	return f.change(k, func(r *apiRecord, now time.Time) bool { return r.ownedLive(owner, now) },
		func(r *apiRecord, now time.Time) { r.CallsStarted, r.UpdatedAt = r.CallsStarted+1, now }), nil
}

// APIKeysHeartbeat renews the owner's live lease for lease from now.
func (f *APIRecords) APIKeysHeartbeat(_ context.Context, k apikey.Key, owner string, lease time.Duration) (bool, error) {
	return f.change(k, func(r *apiRecord, now time.Time) bool { return r.ownedLive(owner, now) },
		func(r *apiRecord, now time.Time) {
			expires := now.Add(lease.Truncate(time.Millisecond))
			r.leaseExpiresAt = &expires
		}), nil
}

// ownedProcessing is a processing record last leased to owner, its lease live or not: a
// completion, release or mark holds after the lease lapsed, since nobody may take over a record
// whose call started.
func ownedProcessing(owner string) func(r *apiRecord, _ time.Time) bool {
	return func(r *apiRecord, _ time.Time) bool {
		return r.State == apikey.StateProcessing && r.LeaseOwner == owner
	}
}

// APIKeysComplete stores the owner's response and the windows from now.
func (f *APIRecords) APIKeysComplete(_ context.Context, c apikey.Completion) (bool, error) {
	return f.change(apikey.Key{ScopeHash: c.ScopeHash, KeyHash: c.KeyHash}, ownedProcessing(c.Owner), func(r *apiRecord, now time.Time) {
		replay, evidence := now.Add(c.ReplayWindow.Truncate(time.Millisecond)), now.Add(c.EvidenceWindow.Truncate(time.Millisecond))
		r.State, r.ResponseStatus, r.ResponseKeyID, r.ResponseSealed, r.ExternalRef = apikey.StateCompleted, c.Status, c.KeyID, c.Sealed, c.ExternalRef
		r.ReplayUntil, r.EvidenceUntil, r.LeaseOwner, r.leaseExpiresAt, r.UpdatedAt = &replay, &evidence, "", nil, now
	}), nil
}

// APIKeysCompleteLate stores the response of c.Owner on a record it no longer holds but nobody
// claimed since (uncertain or reconciled), and returns what it replaced; nil otherwise.
func (f *APIRecords) APIKeysCompleteLate(_ context.Context, c apikey.Completion) (*apikey.LateCompletion, error) {
	var was *apikey.LateCompletion
	f.change(apikey.Key{ScopeHash: c.ScopeHash, KeyHash: c.KeyHash}, func(r *apiRecord, _ time.Time) bool {
		return r.LeaseOwner == c.Owner && (r.State == apikey.StateUncertain || r.State == apikey.StateReconciled)
	}, func(r *apiRecord, now time.Time) {
		was = &apikey.LateCompletion{Was: r.State, WasResolution: r.Resolution}
		note := "completed late by its first owner after it was " + string(r.State)
		if r.Resolution != "" {
			note += " " + string(r.Resolution)
		}
		if r.Note != "" {
			note += " (" + r.Note + ")"
		}
		replay, evidence := now.Add(c.ReplayWindow.Truncate(time.Millisecond)), now.Add(c.EvidenceWindow.Truncate(time.Millisecond))
		if r.EvidenceUntil != nil && r.EvidenceUntil.After(evidence) {
			evidence = *r.EvidenceUntil
		}
		if c.ExternalRef != "" {
			r.ExternalRef = c.ExternalRef
		}
		r.State, r.Resolution, r.ResponseStatus, r.ResponseKeyID, r.ResponseSealed = apikey.StateCompleted, "", c.Status, c.KeyID, c.Sealed
		r.ReplayUntil, r.EvidenceUntil, r.Note = &replay, &evidence, truncateRunes(note, 500)
		r.LeaseOwner, r.leaseExpiresAt, r.UpdatedAt = "", nil, now
	})
	return was, nil
}

func truncateRunes(s string, n int) string {
	if runes := []rune(s); len(runes) > n {
		return string(runes[:n])
	}
	return s
}

// APIKeysRelease gives the owner's record back as received, with no call started.
func (f *APIRecords) APIKeysRelease(_ context.Context, k apikey.Key, owner string) (bool, error) {
	return f.change(k, ownedProcessing(owner), func(r *apiRecord, now time.Time) {
		r.State, r.LeaseOwner, r.leaseExpiresAt, r.CallsStarted, r.UpdatedAt = apikey.StateReceived, "", nil, 0, now
	}), nil
}

// APIKeysMarkUncertain marks the owner's record uncertain with note; it keeps its owner.
func (f *APIRecords) APIKeysMarkUncertain(_ context.Context, k apikey.Key, owner, note string) (bool, error) {
	return f.change(k, ownedProcessing(owner), func(r *apiRecord, now time.Time) {
		r.State, r.leaseExpiresAt, r.Note, r.UpdatedAt = apikey.StateUncertain, nil, note, now
	}), nil
}

// lapsedAfterACall is a processing record whose lease lapsed after a call started.
func lapsedAfterACall(r *apiRecord, now time.Time) bool {
	return r.State == apikey.StateProcessing && r.leaseLapsed(now) && r.CallsStarted > 0
}

func markLapsed(r *apiRecord, now time.Time) {
	r.State, r.leaseExpiresAt, r.Note, r.UpdatedAt = apikey.StateUncertain, nil, noteLapsed, now
}

// APIKeysMarkLapsedUncertain marks a record whose lease lapsed after a call started uncertain.
func (f *APIRecords) APIKeysMarkLapsedUncertain(_ context.Context, k apikey.Key) (bool, error) {
	return f.change(k, lapsedAfterACall, markLapsed), nil
}

// APIKeysMarkReview sends a completed, expired or reconciled record still as read at seen to
// review (uncertain), with note.
func (f *APIRecords) APIKeysMarkReview(_ context.Context, k apikey.Key, note string, seen time.Time) (bool, error) {
	return f.change(k, func(r *apiRecord, _ time.Time) bool {
		return r.UpdatedAt.Equal(seen) &&
			(r.State == apikey.StateCompleted || r.State == apikey.StateExpired || r.State == apikey.StateReconciled)
	}, func(r *apiRecord, now time.Time) { r.State, r.Note, r.UpdatedAt = apikey.StateUncertain, note, now }), nil
}

// APIKeysNeedingLookUp marks the routes' lapsed records uncertain, then returns up to limit
// uncertain records that have stood at least minAge, oldest first.
func (f *APIRecords) APIKeysNeedingLookUp(_ context.Context, routes []string, minAge time.Duration, limit int) (int64, []apikey.Record, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.now()
	var lapsed int64
	var out []apikey.Record
	for _, r := range f.records {
		if !slices.Contains(routes, r.Route) {
			continue
		}
		if lapsedAfterACall(r, now) {
			markLapsed(r, now)
			lapsed++
		}
		if r.State == apikey.StateUncertain && !r.UpdatedAt.After(now.Add(-minAge.Truncate(time.Millisecond))) {
			out = append(out, r.read(now))
		}
	}
	slices.SortFunc(out, func(a, b apikey.Record) int { return a.UpdatedAt.Compare(b.UpdatedAt) })
	return lapsed, out[:min(len(out), max(limit, 0))], nil
}

// APIKeysSettle settles a record awaiting a decision as a look-up answered.
func (f *APIRecords) APIKeysSettle(ctx context.Context, s apikey.Settlement) (bool, error) {
	return f.APIKeysResolve(ctx, s, ledger.AuditEntry{})
}

// APIKeyDailyAdd adds counts to each (route, day, client)'s.
func (f *APIRecords) APIKeyDailyAdd(_ context.Context, counts []apikey.DailyCount) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.daily = append(f.daily, counts...)
	return nil
}

// DailyCounts returns every count added, as added.
func (f *APIRecords) DailyCounts() []apikey.DailyCount {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]apikey.DailyCount(nil), f.daily...)
}
