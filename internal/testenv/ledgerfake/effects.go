package ledgerfake

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/ledger/ledgertest"
	"github.com/replayctl/replayctl/reconcile"
)

// Effects keeps effects rows, jobs and their targets in memory: reconcile.Ledger and
// reconcile.ResolveLedger, for unit tests of reconcile's run and resolve, and consumer.Ledger
// (consumer.go), for the SDK's. Rows are seeded with AddEffects and changed with the methods named
// after ledgertest's (StickLeases, AskedAgo, SettleByHand), so a test reads the same on the fake
// and on PostgreSQL.
type Effects struct {
	store
	rows    map[effectKey]*effectRow
	jobs    map[string]ledgertest.Job
	targets map[targetKey]*target
	sdk     sdkTables
}

var (
	_ reconcile.Ledger        = (*Effects)(nil)
	_ reconcile.ResolveLedger = (*Effects)(nil)
)

type effectKey struct {
	consumer, eventID string
	version           int
}

type targetKey struct{ jobID, eventID string }

// The effects states the ledger has no constant for.
const (
	stateProcessing = "processing"
	stateUncertain  = "uncertain"
	stateCompleted  = "completed"
)

type target struct{ status, detail string }

// effectRow holds the effects columns the SDK and reconcile read and write.
type effectRow struct {
	effectKey
	state, jobID, requestHash, requestHashAlg string
	effectCount, callsStarted, attempts       int
	refs                                      []json.RawMessage
	leaseOwner                                string
	leaseExpiresAt, heartbeatAt               *time.Time
	lastError                                 string
	createdAt, updatedAt                      time.Time
	reviewState, reviewVerdict, reviewNote    string
	reviewedAt                                *time.Time
	reviewedBy                                string
	resultHash, outcomeKind, finalState       string
	resultBody                                json.RawMessage
	replayUntil, evidenceUntil                *time.Time
	writeForbidden                            bool
}

// NewEffects returns a store without rows, jobs or targets.
func NewEffects() *Effects {
	return &Effects{rows: map[effectKey]*effectRow{}, jobs: map[string]ledgertest.Job{}, targets: map[targetKey]*target{}}
}

// AddEffects stores effects with ledgertest.InsertEffects's defaults.
func (f *Effects) AddEffects(effects ...ledgertest.Effect) {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.now()
	for _, e := range effects {
		e = e.Defaults()
		r := &effectRow{effectKey: effectKey{e.Consumer, e.EventID, e.Version}, state: e.State, jobID: e.JobID,
			requestHash: e.RequestHash, requestHashAlg: e.RequestHashAlg, effectCount: e.EffectCount,
			callsStarted: e.CallsStarted, attempts: e.Attempts, leaseOwner: e.LeaseOwner, lastError: e.LastError,
			createdAt: now.Add(-e.CreatedAgo), updatedAt: now.Add(-e.UpdatedAgo)}
		if e.LeaseLapsedAgo > 0 {
			at := now.Add(-e.LeaseLapsedAgo)
			r.leaseExpiresAt = &at
		}
		f.rows[r.effectKey] = r
	}
}

// AddJob stores a job of versions 1 to 2, as ledgertest.InsertJob does.
func (f *Effects) AddJob(j ledgertest.Job) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.jobs[j.ID] = j.Defaults()
}

// AddTargets gives jobID a target in status for each of eventIDs, as ledgertest.InsertTargets does.
func (f *Effects) AddTargets(jobID, status string, eventIDs ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, id := range eventIDs {
		f.targets[targetKey{jobID, id}] = &target{status: status}
	}
}

// TargetStatuses returns the status of each of jobID's targets by event ID.
func (f *Effects) TargetStatuses(jobID string) map[string]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]string{}
	for k, t := range f.targets {
		if k.jobID == jobID {
			out[k.eventID] = t.status
		}
	}
	return out
}

// each applies change to eventIDs' rows, or to every row when none are named.
func (f *Effects) each(eventIDs []string, change func(r *effectRow, now time.Time)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.now()
	for _, r := range f.rows {
		if len(eventIDs) == 0 || slices.Contains(eventIDs, r.eventID) {
			change(r, now)
		}
	}
}

// StickLeases is ledgertest.StickLeases: processing, owned by owner with calls started, lapsed
// lapsedAgo ago and updated a minute before that.
func (f *Effects) StickLeases(owner string, calls int, lapsedAgo time.Duration, eventIDs ...string) {
	f.each(eventIDs, func(r *effectRow, now time.Time) {
		at := now.Add(-lapsedAgo)
		r.state, r.leaseOwner, r.callsStarted, r.leaseExpiresAt = stateProcessing, owner, calls, &at
		r.updatedAt = at.Add(-time.Minute)
	})
}

// AskedAgo is ledgertest.AskedAgo: the last look-up was d ago.
func (f *Effects) AskedAgo(d time.Duration, eventIDs ...string) {
	f.each(eventIDs, func(r *effectRow, now time.Time) {
		at := now.Add(-d)
		r.reviewedAt = &at
	})
}

// SettleByHand is ledgertest.SettleByHand: reconciled now, by someone outside replayctl.
func (f *Effects) SettleByHand(eventIDs ...string) {
	f.each(eventIDs, func(r *effectRow, now time.Time) { r.state, r.updatedAt = ledger.EffectReconciled, now })
}

// CheckSchema always passes: the fake has no schema to be behind.
func (f *Effects) CheckSchema(context.Context) error { return nil }

// AuditInsert keeps e.
func (f *Effects) AuditInsert(_ context.Context, e ledger.AuditEntry) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if e.At.IsZero() {
		e.At = f.now()
	}
	f.audit = append(f.audit, e)
	return nil
}

// EffectsUncertainPage is ledger.Store's: the filter, the (event ID byte order, version) order
// and the cursor alike.
func (f *Effects) EffectsUncertainPage(_ context.Context, flt ledger.UncertainFilter, after *ledger.UncertainCursor, limit int) ([]ledger.UncertainRow, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.now()
	cur := ledger.UncertainCursor{EffectVersion: -1}
	if after != nil {
		cur = *after
	}
	var out []ledger.UncertainRow
	for _, r := range f.rows {
		if r.consumer != flt.Consumer || !f.listed(r, flt, now) || compareKey(r.eventID, r.version, cur.EventID, cur.EffectVersion) <= 0 {
			continue
		}
		row := r.uncertainRow(now)
		row.Stuck = flt.Stuck
		out = append(out, row)
	}
	slices.SortFunc(out, func(a, b ledger.UncertainRow) int {
		return compareKey(a.EventID, a.EffectVersion, b.EventID, b.EffectVersion)
	})
	return out[:min(len(out), max(limit, 0))], nil
}

// listed says whether a page filtered by flt holds r, as effectsUncertainPage's and
// effectsStuckPage's conditions do.
func (f *Effects) listed(r *effectRow, flt ledger.UncertainFilter, now time.Time) bool {
	if flt.Stuck {
		if !r.stuck(now) {
			return false
		}
	} else if r.state != stateUncertain {
		return false
	}
	if flt.JobID != "" && r.jobID != flt.JobID {
		return false
	}
	olderThan := flt.OlderThan.Truncate(time.Millisecond)
	if r.updatedAt.After(now.Add(-olderThan)) {
		return false
	}
	if flt.Due && r.reviewedAt != nil {
		wait := min(max(r.reviewedAt.Sub(r.updatedAt), olderThan), ledger.MaxLookupBackoff)
		if now.Sub(*r.reviewedAt) < wait {
			return false
		}
	}
	return true
}

// stuck is a stuck lease (ledger.UncertainRow.Stuck): processing with a call started, its lease
// lapsed more than ledger.StuckLeaseAfter ago.
func (r *effectRow) stuck(now time.Time) bool {
	return r.state == stateProcessing && r.callsStarted > 0 && r.leaseExpiresAt != nil &&
		r.leaseExpiresAt.Before(now.Add(-ledger.StuckLeaseAfter))
}

// compareKey orders by event ID in byte order (collate "C"), then by version.
func compareKey(eventA string, versionA int, eventB string, versionB int) int {
	if c := strings.Compare(eventA, eventB); c != 0 {
		return c
	}
	return versionA - versionB
}

// refsJSON is the row's external_refs as the ledger reads them: a JSON array, empty when none.
func (r *effectRow) refsJSON() json.RawMessage {
	if len(r.refs) == 0 {
		return json.RawMessage("[]")
	}
	refs, _ := json.Marshal(r.refs)
	return refs
}

// decodeRefs reads a JSON array of references, as the ledger's ::jsonb does; none when empty.
func decodeRefs(raw json.RawMessage) ([]json.RawMessage, error) {
	var refs []json.RawMessage
	if len(raw) == 0 {
		return nil, nil
	}
	err := json.Unmarshal(raw, &refs)
	return refs, err
}

// rowsOfEvent returns the rows of consumer's event, lowest version first. The caller holds f.mu.
func (f *Effects) rowsOfEvent(consumer, eventID string) []*effectRow {
	var out []*effectRow
	for _, r := range f.rows {
		if r.consumer == consumer && r.eventID == eventID {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b *effectRow) int { return a.version - b.version })
	return out
}

func (r *effectRow) uncertainRow(now time.Time) ledger.UncertainRow {
	refs := r.refsJSON()
	return ledger.UncertainRow{EventID: r.eventID, EffectVersion: r.version, State: r.state, JobID: r.jobID,
		RequestHash: r.requestHash, RequestHashAlg: r.requestHashAlg, EffectCount: r.effectCount, CallsStarted: r.callsStarted,
		ExternalRefs: refs, LeaseOwner: r.leaseOwner, LastError: r.lastError, UpdatedAt: r.updatedAt,
		Age: max(now.Sub(r.updatedAt), 0).Truncate(time.Millisecond), ReviewState: r.reviewState,
		ReviewVerdict: r.reviewVerdict, ReviewNote: r.reviewNote, ReviewedAt: r.reviewedAt, ReviewedBy: r.reviewedBy}
}

// EffectsOfEventForReview returns every row of consumer's event, any state, by version.
func (f *Effects) EffectsOfEventForReview(_ context.Context, consumer, eventID string) ([]ledger.UncertainRow, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.now()
	var out []ledger.UncertainRow
	for _, r := range f.rowsOfEvent(consumer, eventID) {
		out = append(out, r.uncertainRow(now))
	}
	return out, nil
}

// EffectsReconcileApply is ledger.Store's: the same refusal of an unknown verdict before any
// change, the same compare-and-set, the rows' new states, their targets and one audit entry each.
func (f *Effects) EffectsReconcileApply(_ context.Context, b ledger.ReconcileBatch) ([]ledger.ReconcileApplied, error) {
	for _, v := range b.Verdicts {
		switch v.Verdict {
		case ledger.VerdictHappened, ledger.VerdictNotHappened, ledger.VerdictUnknown:
		default:
			return nil, fmt.Errorf("reconcile consumer %s event %q version %d: verdict %q is none of %s, %s, %s; nothing was applied",
				b.Consumer, v.EventID, v.EffectVersion, v.Verdict, ledger.VerdictHappened, ledger.VerdictNotHappened, ledger.VerdictUnknown)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.now()
	var out []ledger.ReconcileApplied
	for _, v := range b.Verdicts {
		r, ok := f.rows[effectKey{b.Consumer, v.EventID, v.EffectVersion}]
		if !ok || !applicable(r, v, now) {
			continue
		}
		happened := v.Verdict == ledger.VerdictHappened
		switch {
		case happened:
			r.state = ledger.EffectReconciled
			r.refs = appendMissing(r.refs, v.FoundRefs)
			r.effectCount = max(r.effectCount, r.callsStarted)
		case v.Resolved:
			r.state, r.callsStarted = ledger.EffectReceived, 0
		default:
			r.state = stateUncertain
		}
		r.reviewState = ""
		if !happened && !v.Resolved {
			r.reviewState = ledger.ReviewManual
		}
		r.reviewVerdict, r.reviewNote, r.reviewedBy, r.leaseExpiresAt = v.Verdict, v.Note, b.Actor, nil
		reviewed := now
		r.reviewedAt = &reviewed
		if happened || v.Stuck || v.Resolved {
			r.updatedAt = now
		}
		a := ledger.ReconcileApplied{EventID: r.eventID, EffectVersion: r.version, State: r.state, JobID: r.jobID,
			TargetUpdated: f.settleTarget(r, b.Actor)}
		f.audit = append(f.audit, ledger.AuditEntry{At: now, Actor: b.Actor, JobID: r.jobID, Action: auditAction(r, v),
			Details: map[string]any{"run": b.RunID, "consumer": b.Consumer, "eventId": r.eventID, "effectVersion": r.version,
				"verdict": v.Verdict}})
		out = append(out, a)
	}
	slices.SortFunc(out, func(a, b ledger.ReconcileApplied) int {
		return compareKey(a.EventID, a.EffectVersion, b.EventID, b.EffectVersion)
	})
	return out, nil
}

// applicable is the apply's compare-and-set: the row is still what was listed (uncertain, or a
// stuck lease for a verdict on one), unchanged since, and a resolution is happened or not.
func applicable(r *effectRow, v ledger.ReconcileVerdict, now time.Time) bool {
	if v.Stuck {
		if !r.stuck(now) {
			return false
		}
	} else if r.state != stateUncertain {
		return false
	}
	if v.Resolved && v.Verdict == ledger.VerdictUnknown {
		return false
	}
	if !r.updatedAt.Equal(v.SeenUpdatedAt) {
		return false
	}
	if (r.reviewedAt == nil) != (v.SeenReviewedAt == nil) {
		return false
	}
	return r.reviewedAt == nil || r.reviewedAt.Equal(*v.SeenReviewedAt)
}

// settleTarget updates the target of the replay that wrote r (its job's last version, 2 for every
// job AddJob stores) while it is published or uncertain, and says whether it did.
func (f *Effects) settleTarget(r *effectRow, actor string) bool {
	if _, ok := f.jobs[r.jobID]; !ok || r.version != 2 {
		return false
	}
	t, ok := f.targets[targetKey{r.jobID, r.eventID}]
	if !ok || (t.status != ledger.TargetPublished && t.status != ledger.TargetUncertain) {
		return false
	}
	switch r.state {
	case ledger.EffectReconciled:
		t.status, t.detail = ledger.TargetCompleted, ""
	case ledger.EffectReceived:
		t.status = ledger.TargetFailed
		t.detail = "resolved not_happened by " + actor + "; eligible for a new plan"
	default:
		t.detail = "manual review (look-up: " + r.reviewVerdict + ")"
	}
	return true
}

func auditAction(r *effectRow, v ledger.ReconcileVerdict) string {
	switch {
	case v.Resolved:
		return ledger.AuditResolved
	case r.state == ledger.EffectReconciled:
		return ledger.AuditReconciled
	default:
		return ledger.AuditManualReview
	}
}

// appendMissing appends each reference of found (a JSON array) that refs does not hold yet, once.
func appendMissing(refs []json.RawMessage, found json.RawMessage) []json.RawMessage {
	add, _ := decodeRefs(found)
	for _, ref := range add {
		if !slices.ContainsFunc(refs, func(have json.RawMessage) bool { return bytes.Equal(compact(have), compact(ref)) }) {
			refs = append(refs, ref)
		}
	}
	return refs
}

func compact(raw json.RawMessage) []byte {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return raw
	}
	return b.Bytes()
}

// States renders every row as event:state[:review state], by event ID then version, as a test
// compares the ledger before and after.
func (f *Effects) States() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	rows := make([]*effectRow, 0, len(f.rows))
	for _, r := range f.rows {
		rows = append(rows, r)
	}
	slices.SortFunc(rows, func(a, b *effectRow) int { return compareKey(a.eventID, a.version, b.eventID, b.version) })
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.eventID + ":" + r.state
		if r.reviewState != "" {
			out[i] += ":" + r.reviewState
		}
	}
	return strings.Join(out, " ")
}
