package conformance

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/replayctl/replayctl/ledger"
)

// The fake provider's charges table: holding a lock on it keeps a charge in flight.
const providerTable = "billing_provider_charges"

// killMidCall crashes the consumer in the middle of an external call, for real: the kit holds a
// lock that keeps the provider's charge waiting, publishes an event, and once the charge is in
// flight checks that its start was marked in the ledger before it was made; then it kills the
// consumer's process group with SIGKILL and lets the charge go on without it (the killed
// process's statement may still commit: the call happened, and nobody recorded its outcome). A
// consumer started again, given a copy of the event once the dead instance's lease lapsed, must
// mark the row uncertain and make no second call.
func killMidCall(ctx context.Context, e *Env) error {
	if e.Process == nil {
		return fmt.Errorf("the kit has no control of the consumer's process")
	}
	id := e.event("kill")
	payload := order(id, 100)
	lock, err := e.Seed.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = lock.Rollback(context.WithoutCancel(ctx)) }()
	// Share mode lets the look-up read the charges and keeps every insert waiting.
	if _, err := lock.Exec(ctx, "lock table "+pgx.Identifier{providerTable}.Sanitize()+" in share mode"); err != nil {
		return fmt.Errorf("hold the provider's charges: %w", err)
	}
	if _, err := e.publish(ctx, id, payload, nil); err != nil {
		return err
	}
	if err := e.waitFor(ctx, "the consumer's charge of "+id+" to be in flight (waiting on the provider)", func() (bool, error) {
		return e.chargeWaiting(ctx)
	}); err != nil {
		return err
	}
	r, err := e.row(ctx, id, 1)
	if err != nil {
		return err
	}
	if r == nil || r.State != "processing" || r.CallsStarted < 1 {
		return fmt.Errorf("the charge of %s was in flight before its start was marked in the ledger (row %s): a crash now could not be told from a call never made", id, describeRow(r))
	}
	if err := e.Process.Kill(); err != nil {
		return fmt.Errorf("kill the consumer: %w", err)
	}
	if err := lock.Rollback(ctx); err != nil {
		return err
	}
	if err := e.Process.Start(ctx); err != nil {
		return fmt.Errorf("start the consumer again after the kill: %w", err)
	}
	// The dead instance's lease would lapse on its own in minutes; the kit dates it back, as the
	// dead instance's own heartbeat would have set it, so the copy meets a lapsed lease now.
	key := ledger.EffectKey{Consumer: ConsumerName, EventID: id, EffectVersion: 1}
	if _, err := ledger.EffectsHeartbeat(ctx, e.Seed, key, r.LeaseOwner, -time.Second); err != nil {
		return fmt.Errorf("lapse the killed instance's lease: %w", err)
	}
	if _, err := e.publish(ctx, id, payload, nil); err != nil {
		return err
	}
	if _, err := e.waitRow(ctx, id, 1, stateUncertain); err != nil {
		return fmt.Errorf("after the kill and a copy of the event: %w", err)
	}
	got, err := e.charges(ctx, "order-"+id)
	if err != nil {
		return err
	}
	if got > 1 {
		return fmt.Errorf("the provider charged order-%s %d times after the kill, want at most the one in flight", id, got)
	}
	return nil
}

// chargeWaiting says whether a session is waiting for the lock on the provider's charges.
func (e *Env) chargeWaiting(ctx context.Context) (bool, error) {
	var n int
	err := e.Seed.QueryRow(ctx, `select count(*) from pg_locks l join pg_class c on c.oid = l.relation
 where not l.granted and c.relname = $1 and c.relnamespace = current_schema()::regnamespace`, providerTable).Scan(&n)
	return n > 0, err
}

func describeRow(r *ledger.UncertainRow) string {
	if r == nil {
		return "none"
	}
	return fmt.Sprintf("%s, %d calls started", r.State, r.CallsStarted)
}
