package ledger

import (
	"context"
	"fmt"
)

// Effect version states in effect_versions: live is the version live traffic runs under,
// executing a replay's version while its job runs; completed and cancelled are final.
const (
	EffectVersionLive      = "live"
	EffectVersionExecuting = "executing"
	EffectVersionCompleted = "completed"
	EffectVersionCancelled = "cancelled"
)

const effectVersionsRegister = `
insert into effect_versions (consumer, effect_version, state, job_id, registered_by)
values ($1, $2, $3, $4, $5)`

// EffectVersionsRegister records version of consumer in state, for jobID (empty for a live
// version), through q so `replayctl execute` can register it in the transaction that starts the
// job. A version already registered for the consumer returns an error matching ErrConflict:
// versions are never reused, so a replay cannot inherit another job's registration.
func EffectVersionsRegister(ctx context.Context, q Querier, consumer string, version int, state, jobID, registeredBy string) error {
	_, err := q.Exec(ctx, effectVersionsRegister, consumer, version, state, nullable(jobID), registeredBy)
	if err != nil {
		return fmt.Errorf("register effect version %d of consumer %s (%s, job %q): %w", version, consumer, state, jobID, translate(err))
	}
	return nil
}

// A registration without a job row (registered by hand) reads as a DLQ job: the kind that never
// re-processes a completed event.
const effectVersionsIsExecuting = `
select exists (select from effect_versions
                where consumer = $1 and effect_version = $2 and state = 'executing' and job_id = $3),
       coalesce((select source_kind from jobs where id = $3), 'dlq')`

// ExecutingReplay is what the consumer SDK needs to know of a replayed message's job.
type ExecutingReplay struct {
	// Executing says the (job, version) is registered as executing.
	Executing bool
	// SourceKind is the job's jobtype.SourceDLQ or jobtype.SourceBackfill: a DLQ replay is done once any version
	// settled the event for real, a backfill re-processes events completed under older versions.
	SourceKind string
}

// EffectVersionsIsExecuting reports whether version of consumer is registered as executing for
// jobID, and the job's source kind: the consumer SDK accepts a replayed message only when it is,
// so bumping the version without a recorded job cannot bypass dedup. It is two primary-key
// lookups.
func EffectVersionsIsExecuting(ctx context.Context, q Querier, consumer string, version int, jobID string) (ExecutingReplay, error) {
	var r ExecutingReplay
	if err := q.QueryRow(ctx, effectVersionsIsExecuting, consumer, version, jobID).Scan(&r.Executing, &r.SourceKind); err != nil {
		return r, fmt.Errorf("check whether effect version %d of consumer %s is executing for job %s: %w", version, consumer, jobID, err)
	}
	return r, nil
}
