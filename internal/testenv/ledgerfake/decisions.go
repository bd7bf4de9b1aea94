package ledgerfake

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/replayctl/replayctl/approval"
	"github.com/replayctl/replayctl/job"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/ledger/ledgertest"
)

// Decisions keeps jobs, their shadow verdicts, approval policies and decisions in memory:
// job.Decider, for the approve and reject rules. Jobs and verdicts are seeded with AddJob and
// AddVerdict, as ledgertest.InsertJob and InsertShadowVerdict seed PostgreSQL.
type Decisions struct {
	*Policies
	mu        sync.Mutex
	jobs      map[string]ledger.Job
	verdicts  []ledger.ShadowVerdict
	approvals []approval.Record
	lastID    int64
}

var _ job.Decider = (*Decisions)(nil)

// NewDecisions returns a store without jobs, verdicts, policies or decisions.
func NewDecisions() *Decisions {
	return &Decisions{Policies: NewPolicies(), jobs: map[string]ledger.Job{}}
}

// AddJob stores j (its defaults filled in as InsertJob fills them), created now.
func (f *Decisions) AddJob(j ledgertest.Job) {
	j = j.Defaults()
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.now()
	f.jobs[j.ID] = ledger.Job{ID: j.ID, Consumer: j.Consumer, Status: j.Status, ManifestDigest: j.ManifestDigest,
		EffectVersionFrom: 1, EffectVersionTo: 2, WriteForbidden: j.WriteForbidden, Reason: "ledgertest", Stream: "DLQ_BILLING",
		ExpectedExternalCalls: j.ExpectedExternalCalls, LedgerStateDigest: "sha256:none", CreatedBy: j.CreatedBy,
		CreatedAt: now, UpdatedAt: now, SourceKind: "dlq", PlanSignature: j.PlanSignature}
}

// AddVerdict records a shadow verdict on jobID's digest and returns its ID.
func (f *Decisions) AddVerdict(jobID, digest string, pass bool) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lastID++
	f.verdicts = append(f.verdicts, ledger.ShadowVerdict{ID: f.lastID, JobID: jobID, ManifestDigest: digest, Pass: pass,
		Seed: "ledgertest", Actor: "shadow", CreatedAt: f.now()})
	return f.lastID
}

// JobsGet returns the job with id, or an error matching ledger.ErrJobNotFound.
func (f *Decisions) JobsGet(_ context.Context, id string) (ledger.Job, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	j, ok := f.jobs[id]
	if !ok {
		return ledger.Job{}, fmt.Errorf("%w: the ledger has no job %q", ledger.ErrJobNotFound, id)
	}
	return j, nil
}

// ShadowVerdictsLatest returns jobID's latest verdict, passing or not, or an error matching
// ledger.ErrNoVerdict.
func (f *Decisions) ShadowVerdictsLatest(_ context.Context, jobID string) (ledger.ShadowVerdict, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := len(f.verdicts) - 1; i >= 0; i-- {
		if f.verdicts[i].JobID == jobID {
			return f.verdicts[i], nil
		}
	}
	return ledger.ShadowVerdict{}, fmt.Errorf("%w: job %s has no shadow verdict", ledger.ErrNoVerdict, jobID)
}

// ApprovalsForJob returns every decision on jobID, oldest first.
func (f *Decisions) ApprovalsForJob(_ context.Context, jobID string) ([]approval.Record, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var recs []approval.Record
	for _, r := range f.approvals {
		if r.JobID == jobID {
			recs = append(recs, r)
		}
	}
	sort.Slice(recs, func(i, j int) bool { return recs[i].ID < recs[j].ID })
	return recs, nil
}

// DatabaseNow is the store's clock.
func (f *Decisions) DatabaseNow(context.Context) (time.Time, error) { return f.now(), nil }

// ApprovalsRecord stores r with its audit entry: a signed decision keeps the times its signature
// covers, an unsigned one is dated now and valid for validForSeconds. The job must exist, as the
// table's foreign key requires.
func (f *Decisions) ApprovalsRecord(_ context.Context, r approval.Record, validForSeconds float64, audit ledger.AuditEntry) (approval.Record, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.jobs[r.JobID]; !ok {
		return approval.Record{}, fmt.Errorf("record %s %s of job %s: no such job", r.Actor, r.Decision, r.JobID)
	}
	if r.Signature == "" {
		r.At = f.now()
		r.ExpiresAt = r.At.Add(time.Duration(validForSeconds * float64(time.Second)))
	}
	f.lastID++
	r.ID = f.lastID
	f.approvals = append(f.approvals, r)
	f.appendAudit(audit)
	return r, nil
}
