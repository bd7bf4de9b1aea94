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

const effectVersionsIsExecuting = `
select exists (select from effect_versions
                where consumer = $1 and effect_version = $2 and state = 'executing' and job_id = $3)`

// EffectVersionsIsExecuting reports whether version of consumer is registered as executing for
// jobID: the consumer SDK accepts a replayed message only then, so bumping the version without a
// recorded job cannot bypass dedup. It is one primary-key lookup.
func EffectVersionsIsExecuting(ctx context.Context, q Querier, consumer string, version int, jobID string) (bool, error) {
	var ok bool
	if err := q.QueryRow(ctx, effectVersionsIsExecuting, consumer, version, jobID).Scan(&ok); err != nil {
		return false, fmt.Errorf("check whether effect version %d of consumer %s is executing for job %s: %w", version, consumer, jobID, err)
	}
	return ok, nil
}
