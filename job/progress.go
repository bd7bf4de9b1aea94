package job

import (
	"context"
	"time"

	"github.com/replayctl/replayctl/jobtype"
	"github.com/replayctl/replayctl/ledger"
)

// Progress is where a job's targets stand: the figures execute shows while it runs and status
// shows from another terminal. Targets = Skipped + SourceFailed + Completed + Failed + Uncertain
// + Remaining.
type Progress struct {
	Targets int64 `json:"targets"`
	// Skipped targets were left out at start: their ledger rows drifted since plan.
	Skipped int64 `json:"skipped"`
	// SourceFailed targets could not be published: their DLQ message is gone or changed.
	SourceFailed int64 `json:"sourceFailed"`
	// Published targets were acknowledged by JetStream at least once.
	Published int64 `json:"published"`
	Completed int64 `json:"completed"`
	// Failed targets completed with a business failure under the new version.
	Failed    int64 `json:"failed"`
	Uncertain int64 `json:"uncertain"`
	// InProgress targets have a ledger row under the new version without an outcome yet;
	// Retrying are those of them waiting to retry after a transient failure (what the consumer
	// calls failing: execute's --max-retrying-ratio judges them).
	InProgress int64 `json:"inProgress"`
	Retrying   int64 `json:"retrying"`
	Remaining  int64 `json:"remaining"`
	// ExternalCalls are the calls the replay's handlers started; CallBudget what the guard allows.
	ExternalCalls int64 `json:"externalCalls"`
	CallBudget    int64 `json:"callBudget"`
	// Rate is targets settled per second, over the last few polls; ETA follows from it.
	Rate float64       `json:"ratePerSecond"`
	ETA  time.Duration `json:"-"`
	// State is publishing, throttled, paused, waiting (for outcomes), or the job's final status.
	State string `json:"state"`
	// Reason says why the run is paused or throttled.
	Reason string `json:"reason,omitempty"`
}

// TargetsSettled reports whether a job's targets carry their final status (JobTargetsSettle ran).
func TargetsSettled(status jobtype.Status) bool {
	return status == jobtype.Completed || status == jobtype.Cancelled
}

// ReadProgress reads where rec's targets stand: job_targets for what execute decided itself
// (skipped, failed at the source, published) and the ledger rows the replay wrote for outcomes,
// which execute never takes from acks.
func ReadProgress(ctx context.Context, store CountReader, rec ledger.Job) (Progress, ledger.JobEffectCounts, error) {
	ts, e, err := ReadCounts(ctx, store, rec)
	if err != nil {
		return Progress{}, ledger.JobEffectCounts{}, err
	}
	return ProgressOfJob(rec, ts, e), e, nil
}

// ReadCounts reads rec's target statuses and the replay's ledger rows, the two inputs of
// ProgressOf.
func ReadCounts(ctx context.Context, store CountReader, rec ledger.Job) (map[string]int64, ledger.JobEffectCounts, error) {
	ts, err := store.JobTargetsCount(ctx, rec.ID)
	if err != nil {
		return nil, ledger.JobEffectCounts{}, err
	}
	e, err := store.EffectsJobCounts(ctx, rec.Consumer, rec.EffectVersionTo, rec.ID)
	if err != nil {
		return nil, ledger.JobEffectCounts{}, err
	}
	return ts, e, nil
}

// ProgressOf combines target statuses ts with the replay's ledger rows e. Before the job settles,
// outcomes come from the ledger; after, job_targets holds them (and the ledger rows stay, so the
// source failures are what is left of failed once the business failures are taken out).
func ProgressOf(targets int64, ts map[string]int64, e ledger.JobEffectCounts, settled bool) Progress {
	p := Progress{Targets: targets, Skipped: ts[ledger.TargetSkipped], InProgress: e.Processing + e.Retrying, Retrying: e.Retrying,
		ExternalCalls: e.SettledCalls + e.InFlightCalls}
	if settled {
		p.Completed, p.Failed, p.Uncertain = ts[ledger.TargetCompleted], ts[ledger.TargetFailed], ts[ledger.TargetUncertain]
		// A target the consumer dead-lettered again is failed too, but it was published and
		// delivered: only what is left is a failure at the source.
		p.SourceFailed = max(0, p.Failed-e.BusinessFailed-e.DeadLettered)
		p.Published = ts[ledger.TargetPublished] + p.Completed + p.Uncertain + p.Failed - p.SourceFailed
	} else {
		// job_targets' failed holds the source failures and the targets the consumer
		// dead-lettered again (consumer.failReplayTarget); the ledger's rows tell them apart.
		p.SourceFailed = max(0, ts[ledger.TargetFailed]-e.DeadLettered)
		p.Completed, p.Failed, p.Uncertain = e.Completed, e.BusinessFailed+ts[ledger.TargetFailed], e.Uncertain
		// Acknowledged publishes are recorded in batches, and the consumer may write an outcome
		// first: a target with a row under the job was published, recorded yet or not.
		p.Published = max(ts[ledger.TargetPublished], e.Settled()+e.Processing+e.Retrying+e.DeadLettered)
	}
	p.Remaining = max(0, targets-p.Skipped-p.Completed-p.Failed-p.Uncertain)
	return p
}

// ProgressOfJob is where rec's targets stand, from counts read along with it (ledger.JobsList
// reads many jobs' at once): the figures status shows, computed the same way.
func ProgressOfJob(rec ledger.Job, targetCounts map[string]int64, e ledger.JobEffectCounts) Progress {
	return ProgressOf(rec.Targets, targetCounts, e, TargetsSettled(rec.Status))
}
