package executor

import (
	"context"

	"github.com/replayctl/replayctl/job"
	"github.com/replayctl/replayctl/ledger"
)

// settledStatus reports whether a job's targets carry their final status (JobTargetsSettle ran).
func settledStatus(status job.Status) bool {
	return status == job.Completed || status == job.Cancelled
}

// readProgress reads where job's targets stand: job_targets for what execute decided itself
// (skipped, failed at the source, published) and the ledger rows the replay wrote for outcomes,
// which execute never takes from acks.
func readProgress(ctx context.Context, store *ledger.Store, job ledger.Job) (Progress, ledger.JobEffectCounts, error) {
	ts, e, err := readCounts(ctx, store, job)
	if err != nil {
		return Progress{}, ledger.JobEffectCounts{}, err
	}
	return progressOf(job.Targets, ts, e, settledStatus(job.Status)), e, nil
}

// readCounts reads job's target statuses and the replay's ledger rows, the two inputs of
// progressOf.
func readCounts(ctx context.Context, store *ledger.Store, job ledger.Job) (map[string]int64, ledger.JobEffectCounts, error) {
	ts, err := store.JobTargetsCount(ctx, job.ID)
	if err != nil {
		return nil, ledger.JobEffectCounts{}, err
	}
	e, err := store.EffectsJobCounts(ctx, job.Consumer, job.EffectVersionTo, job.ID)
	if err != nil {
		return nil, ledger.JobEffectCounts{}, err
	}
	return ts, e, nil
}

// progressOf combines target statuses ts with the replay's ledger rows e. Before the job settles,
// outcomes come from the ledger; after, job_targets holds them (and the ledger rows stay, so the
// source failures are what is left of failed once the business failures are taken out).
func progressOf(targets int64, ts map[string]int64, e ledger.JobEffectCounts, settled bool) Progress {
	p := Progress{Targets: targets, Skipped: ts[ledger.TargetSkipped], InProgress: e.Processing + e.Retrying,
		ExternalCalls: e.SettledCalls + e.InFlightCalls}
	if settled {
		p.Completed, p.Failed, p.Uncertain = ts[ledger.TargetCompleted], ts[ledger.TargetFailed], ts[ledger.TargetUncertain]
		p.SourceFailed = max(0, p.Failed-e.BusinessFailed)
		p.Published = ts[ledger.TargetPublished] + p.Completed + p.Uncertain + p.Failed - p.SourceFailed
	} else {
		p.SourceFailed = ts[ledger.TargetFailed]
		p.Completed, p.Failed, p.Uncertain = e.Completed, e.BusinessFailed+p.SourceFailed, e.Uncertain
		// Acknowledged publishes are recorded in batches, and the consumer may write an outcome
		// first: a target with a row under the job was published, recorded yet or not.
		p.Published = max(ts[ledger.TargetPublished], e.Settled()+e.Processing+e.Retrying)
	}
	p.Remaining = max(0, targets-p.Skipped-p.Completed-p.Failed-p.Uncertain)
	return p
}

// unsettled is how many targets may still need a publish: neither skipped nor settled.
func unsettled(ts map[string]int64) int64 {
	return ts[ledger.TargetPending] + ts[ledger.TargetShadowed] + ts[ledger.TargetPublished]
}
