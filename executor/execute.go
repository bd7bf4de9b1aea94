// Package executor replays a shadowed job for real: it checks the gates (the manifest is the
// recorded job, a passing shadow verdict, the version still unused, one executor per job and one
// job per consumer, a fresh plan), registers the job's effect version as executing, publishes each
// target to its original subject with the replay protocol's headers at a bounded rate and
// in-flight count, reads progress from the ledger (never from acks), stops on its guards, and
// honours pause, resume and cancel from other processes. A run interrupted by a crash continues
// where it stopped when started again. The package never prints; progress goes to callbacks.
package executor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/replayctl/replayctl/fingerprint"
	"github.com/replayctl/replayctl/internal/tracing"
	"github.com/replayctl/replayctl/job"
	"github.com/replayctl/replayctl/ledger"
)

// Execute runs opts.Manifest's job. It returns the result and nil when every target settled
// (Result.Uncertain lists what needs manual review); a *GateError (ErrGateRefused) when a gate
// refused, with nothing published; a *StopError (ErrGuardStopped) with the result when a guard or
// a cancel stopped the run; ctx's error when ctx ended (the job stays executing: run it again to
// continue). A dry run returns after the gates.
func Execute(ctx context.Context, js jetstream.JetStream, store Ledger, opts Options) (*Result, error) {
	ctx, span := startJob(ctx, opts.TracerProvider, opts.Manifest)
	r, err := execute(ctx, js, store, opts)
	endJob(span, r, err)
	return r, err
}

func execute(ctx context.Context, js jetstream.JetStream, store Ledger, opts Options) (*Result, error) {
	if err := opts.Normalise(); err != nil {
		return nil, err
	}
	m := opts.Manifest
	if err := store.CheckSchema(ctx); err != nil {
		return nil, err
	}
	s := &session{store: store, js: js, opts: &opts, m: m, traced: tracing.Active(opts.TracerProvider)}
	opts.stage("locking job %s for execute", m.ID)
	lock, err := store.ExecuteLockKept(ctx, m.ID)
	if errors.Is(err, ledger.ErrExecuteRunning) {
		return nil, s.refuse(ctx, GateExecutor, "%v", err)
	}
	if err != nil {
		return nil, err
	}
	defer lock.Release()
	// PostgreSQL drops a session lock with its session, silently: without the checks, a run whose
	// lock connection was killed would go on publishing while `status` reports no executor
	// attached and a second execute of the job is let in. A lock that cannot be taken again ends
	// ctx, and lockLost says why.
	ctx, stopHolding := lock.Hold(ctx, lockCheckInterval, func() {
		s.audit(ctx, "execute.lock_retaken", map[string]any{"reason": "the ledger connection holding the lock was lost"})
	})
	defer stopHolding()
	opts.stage("checking the gates of job %s", m.ID)
	pre, err := s.checkGates(ctx)
	if err != nil {
		return nil, s.lockLost(ctx, err, 0)
	}
	if opts.Warn != nil {
		for _, w := range pre.Warnings {
			opts.Warn(w)
		}
	}
	r := &Result{Preflight: pre, DryRun: opts.DryRun, StartedAt: opts.Now().UTC(), JobStatus: s.job.Status,
		Final: pre.Counts, Uncertain: []ledger.ReviewItem{}, Failed: []ledger.ReviewItem{}}
	if opts.DryRun {
		s.audit(ctx, "execute.dry_run", preflightDetails(pre))
		r.FinishedAt = opts.Now().UTC()
		return r, nil
	}
	if opts.Confirm != nil {
		ok, err := opts.Confirm(pre)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, s.refuse(ctx, GateConfirmation, "not confirmed, nothing was published; run it again and confirm, or pass --yes")
		}
	}
	if err := s.start(ctx, pre); err != nil {
		return nil, s.lockLost(ctx, err, 0)
	}
	r.JobStatus = s.job.Status
	stop, runErr := s.run(ctx, r)
	if runErr != nil {
		return r, s.interrupted(ctx, r, runErr)
	}
	r.Stop = stop
	if err := s.finish(ctx, r, stop); err != nil {
		return r, err
	}
	if stop != nil {
		return r, &StopError{Stop: stop}
	}
	return r, nil
}

// start moves the job to executing and registers its effect version as executing for it, with the
// drifted targets skipped and the audit entry, in one transaction under the consumer's lock, so
// two jobs of one consumer never both start.
func (s *session) start(ctx context.Context, pre Preflight) error {
	m := s.m
	action, reason := "execute.started", "started by "+s.opts.Actor
	if pre.Resume {
		action, reason = "execute.continued", "continued by "+s.opts.Actor+" after an interrupted run"
	}
	err := s.store.ExecuteStart(ctx, ledger.ExecuteStart{
		JobID: m.ID, Consumer: m.Consumer, Transition: job.TransitionFrom(job.EventExecute, s.job.Status, m.ID, reason, s.opts.Actor),
		Actor:         s.opts.Actor,
		EffectVersion: m.EffectVersion.To, Continue: pre.Resume,
		SkipDrifted: pre.Drift.Drifted > 0, HashAlgorithm: fingerprint.Algorithm,
		Pace: ledger.JobPace{Rate: &s.opts.Rate, MaxInFlight: &s.opts.MaxInFlight},
		Audit: ledger.AuditEntry{At: s.opts.Now().UTC(), Actor: s.opts.Actor, JobID: m.ID,
			ManifestDigest: m.Digest, Action: action, Details: preflightDetails(pre)},
	})
	if busy, ok := errors.AsType[*ledger.ConsumerBusyError](err); ok {
		return s.refuseBusyConsumer(ctx, busy.Other)
	}
	switch {
	case errors.Is(err, ledger.ErrJobStatus):
		return s.refuse(ctx, GateStatus, "%v; the job changed status while the gates ran (another operator?): check `replayctl status %s`", err, m.ID)
	case errors.Is(err, ledger.ErrVersionTaken):
		return s.refuse(ctx, GateVersion, "effect version %d of consumer %s was registered by another job since the gates ran; plan again", m.EffectVersion.To, m.Consumer)
	}
	if err == nil {
		s.job.Status = job.To(job.EventExecute)
	}
	return err
}

// lockCheckInterval is how often a run checks that it still holds its job's lock: at most this
// long after the lock's connection dies, the run has taken it again or stopped.
const lockCheckInterval = time.Second

// interrupted records a run that ended before every target settled, and says why and what to do:
// the job stays executing, and running execute again continues it.
func (s *session) interrupted(ctx context.Context, r *Result, err error) error {
	m := s.m
	switch {
	case errors.Is(context.Cause(ctx), ledger.ErrLockLost):
		err = s.lockLost(ctx, err, r.Published)
	case ctx.Err() != nil:
		err = fmt.Errorf("execute of job %s interrupted after publishing %d targets in this run; nothing is lost and the job stays executing: run `replayctl execute` on its manifest again to continue: %w",
			m.ID, r.Published, err)
	default:
		err = stoppedBy(m.ID, r.Published, err)
	}
	s.audit(ctx, "execute.interrupted", map[string]any{"error": err.Error(), "published": r.Published})
	// The figures shown with the error are read again: the last poll may be a second old, or may
	// not have run at all. The ledger may be what failed, so this is best effort, and bounded.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
	defer cancel()
	_ = s.fillReview(rctx, r)
	return err
}

// lockLost returns err, or, when ctx ended because the job's lock was lost, what happened and
// what to do: nothing more is published without the lock.
func (s *session) lockLost(ctx context.Context, err error, published int64) error {
	cause := context.Cause(ctx)
	if !errors.Is(cause, ledger.ErrLockLost) {
		return err
	}
	return fmt.Errorf("execute of job %s stopped after publishing %d targets in this run, because it no longer holds the job's lock: %w; "+
		"nothing is lost and the job stays executing: check `replayctl status %s`, and if no executor is attached run `replayctl execute` on its manifest again",
		s.m.ID, published, cause, s.m.ID)
}

// preflightDetails are the figures an audit entry records for a run's start or dry run.
func preflightDetails(p Preflight) map[string]any {
	return map[string]any{
		"targets": p.Targets, "toPublish": p.ToPublish, "completed": p.Counts.Completed, "failed": p.Counts.Failed,
		"uncertain": p.Counts.Uncertain, "skipped": p.Counts.Skipped, "drifted": p.Drift.Drifted, "driftByKind": p.Drift.ByKind,
		"expectedExternalCalls": p.ExpectedExternalCalls, "callBudget": p.CallBudget, "guards": p.Guards,
		"effectVersion": p.EffectVersion, "writeForbidden": p.WriteForbidden, "verdictId": p.Verdict.ID,
		"rate": p.Rate, "maxInFlight": p.MaxInFlight, "resume": p.Resume, "canary": p.Canary,
	}
}
