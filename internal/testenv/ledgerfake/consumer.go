package ledgerfake

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/replayctl/replayctl/apikey"
	"github.com/replayctl/replayctl/consumer"
	"github.com/replayctl/replayctl/ledger"
)

// Effects is also consumer.Ledger: the SDK's read of an event, its claim and lease, how a
// handling ends, expired evidence settled by the look-up, and the registrations and counts beside
// them, each the compare-and-set of its statement in ledger/effects.go and ledger/expired.go. It
// holds no compact tombstones and no result bodies apart from the rows (`ledger prune`'s forms):
// the tests of those stay on PostgreSQL. Replication reports a server without standbys.
var _ consumer.Ledger = (*Effects)(nil)

// sdkTables are the small tables beside effects the SDK writes and reads.
type sdkTables struct {
	executing  map[executingKey]bool
	algorithms map[string][]ledger.FingerprintAlgorithm
	incidents  []ledger.EffectIncident
	deliveries map[string]ledger.DeliveryCounts
	policies   []apikey.Policy
}

type executingKey struct {
	consumer string
	version  int
	jobID    string
}

// RegisterEffectVersion records version of consumer in state (ledger.EffectVersionExecuting for
// jobID's replay), as ledger.EffectVersionsRegister does.
func (f *Effects) RegisterEffectVersion(consumer string, version int, state, jobID string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.sdk.executing == nil {
		f.sdk.executing = map[executingKey]bool{}
	}
	f.sdk.executing[executingKey{consumer, version, jobID}] = state == ledger.EffectVersionExecuting
}

// LapseLeases is ledgertest.LapseLeases: the leases lapsed a second ago.
func (f *Effects) LapseLeases(eventIDs ...string) {
	f.each(eventIDs, func(r *effectRow, now time.Time) {
		at := now.Add(-time.Second)
		r.leaseExpiresAt = &at
	})
}

// MakeTombstones is ledgertest.MakeTombstones: expired, the state they ended in kept.
func (f *Effects) MakeTombstones(eventIDs ...string) {
	f.each(eventIDs, func(r *effectRow, _ time.Time) { r.finalState, r.state = r.state, ledger.EffectExpired })
}

// ForbidWrites is ledgertest.ForbidWrites: written by a write-forbidden replay.
func (f *Effects) ForbidWrites(eventIDs ...string) {
	f.each(eventIDs, func(r *effectRow, _ time.Time) { r.writeForbidden = true })
}

// Incidents returns the incidents recorded, as recorded.
func (f *Effects) Incidents() []ledger.EffectIncident {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]ledger.EffectIncident(nil), f.sdk.incidents...)
}

func (r *effectRow) effectRow(now time.Time) ledger.EffectRow {
	refs := r.refsJSON()
	out := ledger.EffectRow{Consumer: r.consumer, EventID: r.eventID, EffectVersion: r.version, State: r.state,
		RequestHash: r.requestHash, RequestHashAlg: r.requestHashAlg, ResultHash: r.resultHash, ResultBody: r.resultBody,
		OutcomeKind: r.outcomeKind, EffectCount: r.effectCount, ExternalRefs: refs, LeaseOwner: r.leaseOwner,
		LeaseExpiresAt: r.leaseExpiresAt, HeartbeatAt: r.heartbeatAt, ReplayUntil: r.replayUntil, EvidenceUntil: r.evidenceUntil,
		JobID: r.jobID, Attempts: r.attempts, CallsStarted: r.callsStarted, LastError: r.lastError,
		WriteForbidden: r.writeForbidden, CreatedAt: r.createdAt, UpdatedAt: r.updatedAt}
	if r.leaseLive(now) {
		out.LeaseLive, out.LeaseRemaining = true, r.leaseExpiresAt.Sub(now).Truncate(time.Millisecond)
	}
	return out
}

func (r *effectRow) leaseLive(now time.Time) bool {
	return r.leaseExpiresAt != nil && r.leaseExpiresAt.After(now)
}

// EffectsForEvent returns every row of consumer's event, lowest version first.
func (f *Effects) EffectsForEvent(_ context.Context, consumer, eventID string) ([]ledger.EffectRow, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.now()
	var out []ledger.EffectRow
	for _, r := range f.rowsOfEvent(consumer, eventID) {
		out = append(out, r.effectRow(now))
	}
	return out, nil
}

// EffectsClaim takes the lease on c.Key for c.Owner, as effectsClaim does: refused while another
// version of the event is leased, uncertain or (AnyVersionSettles) settled for real; otherwise the
// row is inserted, or taken over when it is received or its lease lapsed before any call, and it
// still holds the fingerprint the caller read.
func (f *Effects) EffectsClaim(_ context.Context, c ledger.EffectClaim) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.now()
	for _, o := range f.rows {
		if o.consumer != c.Key.Consumer || o.eventID != c.Key.EventID || o.version == c.Key.EffectVersion {
			continue
		}
		settled := o.state == stateCompleted || o.state == ledger.EffectReconciled || o.state == ledger.EffectExpired
		if o.state == stateUncertain || (o.state == stateProcessing && o.leaseLive(now)) || (c.AnyVersionSettles && settled && !o.writeForbidden) {
			return false, nil
		}
	}
	key := effectKey{c.Key.Consumer, c.Key.EventID, c.Key.EffectVersion}
	r, ok := f.rows[key]
	if !ok {
		r = &effectRow{effectKey: key, createdAt: now}
		f.rows[key] = r
	} else {
		hash, alg := c.TakeOverHash, c.TakeOverHashAlg
		if alg == "" {
			hash, alg = c.RequestHash, c.RequestHashAlg
		}
		takeable := r.state == ledger.EffectReceived || (r.state == stateProcessing && !r.leaseLive(now) && r.callsStarted == 0)
		if !takeable || r.requestHashAlg != alg || r.requestHash != hash {
			return false, nil
		}
	}
	expires, heartbeat := now.Add(c.Lease.Truncate(time.Millisecond)), now
	r.state, r.leaseOwner, r.leaseExpiresAt, r.heartbeatAt = stateProcessing, c.Owner, &expires, &heartbeat
	r.attempts, r.callsStarted, r.requestHash, r.requestHashAlg, r.updatedAt = r.attempts+1, 0, c.RequestHash, c.RequestHashAlg, now
	if c.JobID != "" {
		r.jobID = c.JobID
	}
	return true, nil
}

// change applies set to key's row when when holds, and says whether it did.
func (f *Effects) change(key ledger.EffectKey, when func(r *effectRow, now time.Time) bool, set func(r *effectRow, now time.Time)) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.now()
	r, ok := f.rows[effectKey{key.Consumer, key.EventID, key.EffectVersion}]
	if !ok || !when(r, now) {
		return false
	}
	set(r, now)
	return true
}

// heldBy is a processing row leased to owner, its lease live or not.
func heldBy(owner string) func(r *effectRow, _ time.Time) bool {
	return func(r *effectRow, _ time.Time) bool { return r.state == stateProcessing && r.leaseOwner == owner }
}

// EffectsHeartbeat extends owner's lease to lease from now.
func (f *Effects) EffectsHeartbeat(_ context.Context, key ledger.EffectKey, owner string, lease time.Duration) (bool, error) {
	return f.change(key, heldBy(owner), func(r *effectRow, now time.Time) {
		expires, heartbeat := now.Add(lease.Truncate(time.Millisecond)), now
		r.leaseExpiresAt, r.heartbeatAt, r.updatedAt = &expires, &heartbeat, now
	}), nil
}

// EffectsCallStarted records call number ordinal under owner's live lease.
func (f *Effects) EffectsCallStarted(_ context.Context, key ledger.EffectKey, owner string, ordinal int) (bool, error) {
	return f.change(key, func(r *effectRow, now time.Time) bool { return heldBy(owner)(r, now) && r.leaseLive(now) },
		func(r *effectRow, now time.Time) { r.callsStarted, r.updatedAt = max(r.callsStarted, ordinal), now }), nil
}

// EffectsComplete stores c's outcome and releases the lease, if c.Owner holds the row.
func (f *Effects) EffectsComplete(_ context.Context, c ledger.EffectCompletion) (bool, error) {
	refs, err := decodeRefs(c.ExternalRefs)
	if err != nil {
		return false, fmt.Errorf("record the outcome of %s: external refs: %w", c.Key, err)
	}
	return f.change(c.Key, heldBy(c.Owner), func(r *effectRow, now time.Time) {
		replay, evidence := now.Add(c.ResultRetention.Truncate(time.Millisecond)), now.Add(c.EvidenceRetention.Truncate(time.Millisecond))
		r.state, r.resultHash, r.resultBody, r.outcomeKind = stateCompleted, c.ResultHash, c.ResultBody, c.OutcomeKind
		r.effectCount, r.refs, r.lastError, r.writeForbidden = c.EffectCount, refs, c.LastError, c.WriteForbidden
		r.leaseOwner, r.leaseExpiresAt, r.replayUntil, r.evidenceUntil, r.updatedAt = "", nil, &replay, &evidence, now
	}), nil
}

// EffectsRelease gives owner's row back as received after a transient failure with no call made.
func (f *Effects) EffectsRelease(_ context.Context, key ledger.EffectKey, owner, lastError string) (bool, error) {
	return f.change(key, heldBy(owner), func(r *effectRow, now time.Time) {
		r.state, r.leaseOwner, r.leaseExpiresAt, r.callsStarted = ledger.EffectReceived, "", nil, 0
		r.outcomeKind, r.lastError, r.updatedAt = "transient", lastError, now
	}), nil
}

// EffectsMarkUncertain marks u.Owner's row uncertain; the owner is kept for whoever reviews it.
func (f *Effects) EffectsMarkUncertain(_ context.Context, u ledger.EffectUncertainty) (bool, error) {
	refs, err := decodeRefs(u.ExternalRefs)
	if err != nil {
		return false, fmt.Errorf("mark %s uncertain: external refs: %w", u.Key, err)
	}
	return f.change(u.Key, heldBy(u.Owner), func(r *effectRow, now time.Time) {
		r.state, r.effectCount, r.refs, r.lastError, r.leaseExpiresAt, r.updatedAt = stateUncertain, u.EffectCount, refs, u.LastError, nil, now
	}), nil
}

// EffectsMarkLapsedUncertain marks key uncertain if its lease lapsed after a call started.
func (f *Effects) EffectsMarkLapsedUncertain(_ context.Context, key ledger.EffectKey) (bool, error) {
	return f.change(key, func(r *effectRow, now time.Time) bool {
		return r.state == stateProcessing && !r.leaseLive(now) && r.callsStarted > 0
	}, func(r *effectRow, now time.Time) {
		owner := r.leaseOwner
		if owner == "" {
			owner = "an unknown owner"
		}
		r.state, r.updatedAt = stateUncertain, now
		r.lastError = "lease of " + owner + " lapsed after " + strconv.Itoa(r.callsStarted) +
			" external call(s) started; their outcome is unknown: review by hand"
	}), nil
}

// EffectsReopenExpired turns the tombstones of eventID under versions back into received rows,
// with the look-up's not happened as their history, and audits each; it returns how many.
func (f *Effects) EffectsReopenExpired(_ context.Context, consumer, eventID string, versions []int, note, actor string) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.now()
	var n int64
	for _, v := range versions {
		r, ok := f.rows[effectKey{consumer, eventID, v}]
		if !ok || r.state != ledger.EffectExpired {
			continue
		}
		reviewed := now
		r.state, r.replayUntil, r.evidenceUntil, r.reviewVerdict = ledger.EffectReceived, nil, nil, ledger.VerdictNotHappened
		r.reviewNote, r.reviewedAt, r.reviewedBy, r.updatedAt = note, &reviewed, actor, now
		f.audit = append(f.audit, ledger.AuditEntry{At: now, Actor: actor, JobID: r.jobID, Action: ledger.AuditEvidenceExpired})
		n++
	}
	return n, nil
}

// EffectsApplyExpiredVerdict writes v's row where there is none or a tombstone: reconciled for
// happened (with fresh evidence), uncertain for review otherwise; false when another row is there.
func (f *Effects) EffectsApplyExpiredVerdict(_ context.Context, v ledger.ExpiredVerdict) (bool, error) {
	found, err := decodeRefs(v.ExternalRefs)
	if err != nil {
		return false, fmt.Errorf("record look-up verdict %s for %s: external refs: %w", v.Verdict, v.Key, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.now()
	key := effectKey{v.Key.Consumer, v.Key.EventID, v.Key.EffectVersion}
	r, ok := f.rows[key]
	if ok && r.state != ledger.EffectExpired {
		return false, nil
	}
	if !ok {
		r = &effectRow{effectKey: key, requestHash: v.RequestHash, requestHashAlg: v.RequestHashAlg, jobID: v.JobID,
			createdAt: now, refs: found, effectCount: len(found)}
		f.rows[key] = r
	} else {
		r.refs = appendMissing(r.refs, v.ExternalRefs)
	}
	reviewed := now
	r.state, r.reviewState, r.lastError = ledger.EffectReconciled, "", ""
	r.replayUntil, r.evidenceUntil = nil, nil
	if v.Verdict == ledger.VerdictHappened {
		replay, evidence := now, now.Add(v.EvidenceRetention.Truncate(time.Millisecond))
		r.replayUntil, r.evidenceUntil = &replay, &evidence
	} else {
		r.state, r.reviewState = stateUncertain, ledger.ReviewManual
		r.lastError = "the ledger's evidence of this event expired and the look-up did not prove what happened (" + v.Verdict +
			"): review it by hand"
	}
	r.reviewVerdict, r.reviewNote, r.reviewedAt, r.reviewedBy, r.updatedAt = v.Verdict, v.Note, &reviewed, v.Actor, now
	f.audit = append(f.audit, ledger.AuditEntry{At: now, Actor: v.Actor, JobID: v.JobID, Action: ledger.AuditEvidenceExpired})
	return true, nil
}

// EffectVersionsIsExecuting reports whether version is registered as executing for jobID, and
// the job's source kind (dlq unless AddJob's job says otherwise).
func (f *Effects) EffectVersionsIsExecuting(_ context.Context, consumer string, version int, jobID string) (ledger.ExecutingReplay, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return ledger.ExecutingReplay{Executing: f.sdk.executing[executingKey{consumer, version, jobID}], SourceKind: "dlq"}, nil
}

// JobTargetsSetOutcome sets status (skipped or failed) on jobID's targets in outcomes that are
// still pending, shadowed or published, and returns how many changed.
func (f *Effects) JobTargetsSetOutcome(_ context.Context, jobID, status string, outcomes []ledger.TargetOutcome) (int64, error) {
	if status != ledger.TargetSkipped && status != ledger.TargetFailed {
		return 0, fmt.Errorf("set the outcome of %d targets of job %s: status %q is neither %s nor %s",
			len(outcomes), jobID, status, ledger.TargetSkipped, ledger.TargetFailed)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var n int64
	for _, o := range outcomes {
		t, ok := f.targets[targetKey{jobID, o.EventID}]
		if !ok || (t.status != ledger.TargetPending && t.status != ledger.TargetShadowed && t.status != ledger.TargetPublished) {
			continue
		}
		t.status, t.detail = status, o.Detail
		n++
	}
	return n, nil
}

// FingerprintAlgorithmRegister records consumer's algorithm with options as its current one;
// ledger.ErrFingerprintOptionsClash when the name is registered with other options.
func (f *Effects) FingerprintAlgorithmRegister(_ context.Context, consumer, algorithm, options string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.sdk.algorithms == nil {
		f.sdk.algorithms = map[string][]ledger.FingerprintAlgorithm{}
	}
	now := f.now()
	algs := f.sdk.algorithms[consumer]
	for i, a := range algs {
		if a.Algorithm != algorithm {
			continue
		}
		if a.Options != options {
			return fmt.Errorf("%w: consumer %s, algorithm %s: change the fingerprint options (or their order of patterns) so their digest differs",
				ledger.ErrFingerprintOptionsClash, consumer, algorithm)
		}
		algs[i].LastRegisteredAt = now
		return nil
	}
	f.sdk.algorithms[consumer] = append(algs, ledger.FingerprintAlgorithm{Algorithm: algorithm, Options: options,
		FirstRegisteredAt: now, LastRegisteredAt: now})
	return nil
}

// FingerprintAlgorithms returns consumer's algorithms, the one registered last first.
func (f *Effects) FingerprintAlgorithms(_ context.Context, consumer string) ([]ledger.FingerprintAlgorithm, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := append([]ledger.FingerprintAlgorithm(nil), f.sdk.algorithms[consumer]...)
	slices.SortFunc(out, func(a, b ledger.FingerprintAlgorithm) int {
		if c := b.LastRegisteredAt.Compare(a.LastRegisteredAt); c != 0 {
			return c
		}
		return compareKey(a.Algorithm, 0, b.Algorithm, 0)
	})
	return out, nil
}

// EffectIncidentsInsert records inc once per DedupKey.
func (f *Effects) EffectIncidentsInsert(_ context.Context, inc ledger.EffectIncident) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if slices.ContainsFunc(f.sdk.incidents, func(have ledger.EffectIncident) bool {
		return have.Consumer == inc.Consumer && have.DedupKey == inc.DedupKey
	}) {
		return nil
	}
	f.sdk.incidents = append(f.sdk.incidents, inc)
	return nil
}

// DeliveryCountsAdd adds n to consumer's counts.
func (f *Effects) DeliveryCountsAdd(_ context.Context, consumer string, n ledger.DeliveryCounts) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.sdk.deliveries == nil {
		f.sdk.deliveries = map[string]ledger.DeliveryCounts{}
	}
	c := f.sdk.deliveries[consumer]
	c.Deliveries, c.Duplicates = c.Deliveries+n.Deliveries, c.Duplicates+n.Duplicates
	f.sdk.deliveries[consumer] = c
	return nil
}

// EffectsUncertainSummary counts consumer's uncertain rows and the age of the oldest.
func (f *Effects) EffectsUncertainSummary(_ context.Context, consumer string) (ledger.UncertainSummary, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.now()
	var s ledger.UncertainSummary
	for _, r := range f.rows {
		if r.consumer == consumer && r.state == stateUncertain {
			s.Count++
			s.OldestAge = max(s.OldestAge, now.Sub(r.updatedAt).Round(time.Millisecond))
		}
	}
	return s, nil
}

// Replication reports a server with no standby.
func (f *Effects) Replication(context.Context) (ledger.Replication, error) {
	return ledger.Replication{SynchronousCommit: "on"}, nil
}

// RetentionPoliciesRegister keeps policies, replacing those of the same kind and name.
func (f *Effects) RetentionPoliciesRegister(_ context.Context, policies []apikey.Policy) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range policies {
		f.sdk.policies = slices.DeleteFunc(f.sdk.policies, func(have apikey.Policy) bool { return have.Kind == p.Kind && have.Name == p.Name })
		f.sdk.policies = append(f.sdk.policies, p)
	}
	return nil
}
