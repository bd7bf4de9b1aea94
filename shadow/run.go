// Package shadow runs a planned replay job through the consumer's shadow responder before anything
// is replayed for real: every target is sent once under the new effect version and its outcome
// stored on job_targets, a deterministic sample is shadowed twice (to tell noise from change) and
// diffed against the originals, and a pass/fail verdict is recorded with the manifest digest,
// which execute requires. The package never prints; progress goes to callbacks.
package shadow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/replayctl/replayctl/internal/tracing"
	"github.com/replayctl/replayctl/job"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/protocol"
)

// Run shadows the job of opts.Manifest: it checks the job, shadows the sample twice, then every
// target, and records the verdict with the job's status (shadowed) and an audit entry in one
// transaction. A failing verdict is not an error: Report.Verdict says so. When ctx ends, Run
// returns its error; the outcomes stored so far stay, no verdict is recorded, and the job returns
// to the status it had before the run (planned, or shadowed with its earlier verdict).
func Run(ctx context.Context, nc *nats.Conn, js jetstream.JetStream, store Ledger, opts Options) (*Report, error) {
	ctx, span := startShadow(ctx, opts.Manifest)
	r, err := run(ctx, nc, js, store, opts)
	endShadow(span, r, err)
	return r, err
}

func run(ctx context.Context, nc *nats.Conn, js jetstream.JetStream, store Ledger, opts Options) (*Report, error) {
	if err := opts.Normalise(); err != nil {
		return nil, err
	}
	m := opts.Manifest
	if err := store.CheckSchema(ctx); err != nil {
		return nil, err
	}
	lock, err := store.ShadowLockKept(ctx, m.ID)
	if err != nil {
		return nil, err
	}
	defer lock.Release()
	// A lock whose connection died is taken again, or the run stops: a second shadow run must not
	// be let in to interleave its outcomes with this one's.
	ctx, stopHolding := lock.Hold(ctx, lockCheckInterval, nil)
	defer stopHolding()
	opts.stage("checking job %s against the manifest", m.ID)
	rec, err := job.CheckRecorded(ctx, store, m)
	if err != nil {
		if errors.Is(err, job.ErrNotRecorded) {
			err = fmt.Errorf("%w: %w", ErrJobMismatch, err)
		}
		return nil, err
	}
	r := &Report{
		JobID: m.ID, ManifestDigest: m.Digest, Consumer: m.Consumer, Reason: m.Reason, Ticket: m.Ticket, PlannedBy: m.CreatedBy,
		Selection: m.Source.Selection, ToSubject: m.Source.ToSubject,
		Subject:       protocol.ShadowSubject(m.Consumer),
		EffectVersion: m.EffectVersion, WriteForbidden: m.WriteForbidden, StartedAt: opts.Now().UTC(),
		Seed:   seedOf(m.Digest),
		Totals: Totals{Targets: m.Stats.Targets, ExpectedExternalCalls: m.ExpectedExternalCalls, EffectKinds: map[string]int64{}},
	}
	// Plan leaves the analyze of its new targets to the steps that page them: without statistics
	// PostgreSQL sorts every remaining target for each page (ledger.JobTargetsAnalyze). A failure
	// only makes paging slower.
	_ = store.JobTargetsAnalyze(ctx)
	if err := start(ctx, store, &opts, r); err != nil {
		return nil, err
	}
	req := &requester{nc: nc, subject: r.Subject, jobID: m.ID, writeForbidden: m.WriteForbidden, timeout: opts.Timeout,
		traced: tracing.Active(nil)}
	sh := &runner{store: store, js: js, m: m, opts: &opts, req: req, totals: &r.Totals,
		cmp: &comparer{ignore: newPathSet(opts.IgnoreFields)}}
	if err := sh.sample(ctx, r); err != nil {
		return nil, stoppedAndReturned(ctx, store, &opts, r, rec.Status, err)
	}
	if !r.Totals.Aborted {
		opts.stage("shadowing all %s targets under effect version %d on %s", count(r.Totals.Targets), m.EffectVersion.To, r.Subject)
		if err := sh.fullPass(ctx); err != nil {
			return nil, stoppedAndReturned(ctx, store, &opts, r, rec.Status, err)
		}
	}
	if err := sh.storeUncountedSample(ctx); err != nil {
		return nil, stoppedAndReturned(ctx, store, &opts, r, rec.Status, err)
	}
	r.Totals.SealedNotOpened = sh.sealedNotOpened
	r.FinishedAt = opts.Now().UTC()
	r.Verdict = judgeVerdict(r.Totals, opts.Thresholds)
	opts.stage("recording the verdict (%s) of job %s", passFail(r.Verdict.Pass), m.ID)
	if err := record(ctx, store, &opts, r); err != nil {
		return nil, err
	}
	return r, nil
}

// lockCheckInterval is how often a run checks that it still holds the job's shadow lock.
const lockCheckInterval = time.Second

// stopped says that a pass which broke off (NATS or the ledger failed, or it was interrupted)
// left no verdict, and what to do: nothing was made, and shadowing again starts over.
func stopped(ctx context.Context, jobID string, err error) error {
	if cause := context.Cause(ctx); errors.Is(cause, ledger.ErrLockLost) {
		err = cause
	}
	return fmt.Errorf("shadow of job %s stopped before its verdict: %w; no verdict was recorded and no external call was made: run `replayctl shadow` on its manifest again",
		jobID, err)
}

func (o *Options) stage(format string, args ...any) {
	if o.Stage != nil {
		o.Stage(fmt.Sprintf(format, args...))
	}
}

func passFail(pass bool) string {
	if pass {
		return "pass"
	}
	return "fail"
}

// start marks the job shadowing, if it has not run yet, and forgets the previous run's outcomes,
// with its audit entry, in one transaction.
func start(ctx context.Context, store Ledger, opts *Options, r *Report) error {
	err := store.ShadowStart(ctx, ledger.ShadowStart{
		Transition: job.Transition(job.EventShadow, r.JobID, "shadow started", opts.Actor),
		Audit: ledger.AuditEntry{
			At: r.StartedAt, Actor: opts.Actor, JobID: r.JobID, ManifestDigest: r.ManifestDigest, Action: "shadow.started",
			Details: map[string]any{
				"targets": r.Totals.Targets, "seed": r.Seed, "sample": opts.Sample, "concurrency": opts.Concurrency,
				"timeoutSeconds": opts.Timeout.Seconds(), "effectVersion": r.EffectVersion, "subject": r.Subject,
			},
		},
	})
	if errors.Is(err, ledger.ErrJobStatus) {
		return fmt.Errorf("%w: %w; shadow checks a job before it runs, and this one already ran or was given up: plan a new job for what is left",
			ErrJobMismatch, err)
	}
	return err
}

// record stores the verdict, the job's new status and the audit entry in one transaction.
func record(ctx context.Context, store Ledger, opts *Options, r *Report) error {
	thresholds, err := json.Marshal(r.Verdict.Thresholds)
	if err != nil {
		return err
	}
	totals, err := json.Marshal(r.Totals)
	if err != nil {
		return err
	}
	return store.ShadowRecordVerdict(ctx, ledger.ShadowVerdict{
		JobID: r.JobID, ManifestDigest: r.ManifestDigest, Pass: r.Verdict.Pass, Seed: r.Seed,
		Thresholds: thresholds, Totals: totals, Reasons: r.Verdict.Reasons, ReportPath: opts.ReportPath, Actor: opts.Actor,
	}, job.Transition(job.EventVerdict, r.JobID, "shadow verdict: "+passFail(r.Verdict.Pass), opts.Actor), ledger.AuditEntry{
		At: r.FinishedAt, Actor: opts.Actor, JobID: r.JobID, ManifestDigest: r.ManifestDigest, Action: "shadow.verdict",
		Details: map[string]any{
			"verdict": r.Verdict, "seed": r.Seed,
			"reportPath": opts.ReportPath, "totals": r.Totals,
		},
	})
}
