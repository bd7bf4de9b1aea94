package ledger_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/replayctl/replayctl/internal/testenv/pgtest"
	"github.com/replayctl/replayctl/ledger"
)

// A completed effect's body lives in the week of its replay_until, where every reader finds it;
// prune drops a week whose replay windows all ended as one partition (its disk returned, no row
// updated), keeps the weeks still in their window, and makes the weeks ahead.
func TestResultBodiesLeaveAWeekAtATimeByPartition(t *testing.T) {
	t.Parallel()
	store := pgtest.Ledger(t)
	ctx := t.Context()
	keys := claimed(t, store, 2, "i-1")
	for i, k := range keys {
		ok, err := store.EffectsComplete(ctx, ledger.EffectCompletion{Key: k, Owner: "i-1", ResultHash: "sha256:r",
			ResultBody: json.RawMessage(`{"status":"charged"}`), EffectCount: 1, ResultRetention: time.Duration(i+1) * time.Hour, EvidenceRetention: 48 * time.Hour})
		if err != nil || !ok {
			t.Fatal(ok, err)
		}
	}
	if n := queryInt(t, store, `select count(*) from effects where result_body is not null`); n != 0 {
		t.Errorf("%d bodies written into effects rows; want them in effect_bodies", n)
	}
	if n := queryInt(t, store, `select count(*) from effect_bodies b join effects e using (consumer, event_id, effect_version, replay_until)
		where b.tableoid <> 'effect_bodies_default'::regclass`); n != 2 {
		t.Errorf("%d bodies in their week's partition, want 2", n)
	}
	rows, err := store.EffectsForEvent(ctx, keys[0].Consumer, keys[0].EventID)
	if err != nil || len(rows) != 1 || string(rows[0].ResultBody) != `{"status": "charged"}` {
		t.Fatalf("the SDK's read of a completed row: %v %+v", err, rows)
	}

	// Three weeks ago: a week whose replay windows all ended, with a body of another consumer in
	// it, and a stray body in the default partition.
	week := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -21)
	for week.Weekday() != time.Monday {
		week = week.AddDate(0, 0, -1)
	}
	name := "effect_bodies_w" + week.Format("20060102")
	execSQL(t, store, `create table `+name+` partition of effect_bodies for values from ('`+week.Format(time.RFC3339)+`') to ('`+week.AddDate(0, 0, 7).Format(time.RFC3339)+`')`)
	execSQL(t, store, `insert into effect_bodies values ('billing', 'old-1', 1, $1, '{}'), ('shipping', 'old-2', 1, $1, '{}'), ('billing', 'stray', 1, date_trunc('week', now() at time zone 'UTC') at time zone 'UTC' - interval '1 hour', '{}')`,
		week.Add(time.Hour))

	count, err := store.PruneCount(ctx, ledger.PruneOptions{AllConsumers: true})
	if err != nil {
		t.Fatal(err)
	}
	// The stray is dated before this week, the first partition migrate made: it is in the default.
	strayInDefault := queryInt(t, store, `select count(*) from effect_bodies_default where event_id = 'stray'`)
	if want := int64(2 + strayInDefault); strayInDefault != 1 || count.PartitionedBodies != want {
		t.Errorf("dry run: %d partitioned bodies, want %d (the old week's 2, the default's stray)", count.PartitionedBodies, want)
	}
	if _, err := store.Prune(ctx, ledger.PruneOptions{AllConsumers: true, Actor: "alice"}); err != nil {
		t.Fatal(err)
	}
	if n := queryInt(t, store, `select count(*) from pg_class where relname = $1 and relnamespace = current_schema()::regnamespace`, name); n != 0 {
		t.Errorf("the old week's partition %s is still there", name)
	}
	if n := queryInt(t, store, `select count(*) from effect_bodies where event_id in ('old-1', 'old-2', 'stray')`); n != 0 {
		t.Errorf("%d expired bodies left", n)
	}
	if n := queryInt(t, store, `select count(*) from effect_bodies`); n != 2 {
		t.Errorf("%d bodies left, want the 2 still inside their replay window", n)
	}
	ahead := queryInt(t, store, `select count(*) from pg_inherits where inhparent = 'effect_bodies'::regclass`)
	if ahead < 17 {
		t.Errorf("%d partitions after prune; want the weeks of the next 120 days made", ahead)
	}
	if n := queryInt(t, store, `select count(*) from audit where action = 'ledger.prune' and (details->>'partitionedBodies')::int >= 2`); n != 1 {
		t.Errorf("%d audit entries of the prune naming the dropped bodies, want 1", n)
	}
}

// A prune that meets a long transaction on effect_bodies waits at most its lock timeout (2 s)
// once for the partitions it would drop and once for those it would make, then leaves them to
// the next run: a DDL lock waiting longer would queue every completion of the SDK behind it.
func TestPruneSkipsAPartitionItCannotLockSoon(t *testing.T) {
	t.Parallel()
	store := pgtest.Ledger(t)
	ctx := t.Context()
	week := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -14)
	for week.Weekday() != time.Monday {
		week = week.AddDate(0, 0, -1)
	}
	name := "effect_bodies_w" + week.Format("20060102")
	execSQL(t, store, `create table `+name+` partition of effect_bodies for values from ('`+week.Format(time.RFC3339)+`') to ('`+week.AddDate(0, 0, 7).Format(time.RFC3339)+`')`)
	execSQL(t, store, `insert into effect_bodies values ('billing', 'old-1', 1, $1, '{}')`, week.Add(time.Hour))
	execSQL(t, store, `insert into effects (consumer, event_id, effect_version, state, request_hash) values ('billing', 'e', 1, 'received', 'sha256:x')`)

	long, err := pgtest.Pool(t, store).Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := long.Exec(ctx, `select count(*) from effect_bodies`); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = store.Prune(ctx, ledger.PruneOptions{Consumer: "billing", Actor: "alice"})
	took := time.Since(start)
	long.Rollback(ctx)
	if err != nil || took > 10*time.Second {
		t.Fatalf("prune beside a long transaction: %v after %s; want it to end, skipping what it could not lock", err, took)
	}
	if n := queryInt(t, store, `select count(*) from pg_class where relname = $1 and relnamespace = current_schema()::regnamespace`, name); n != 1 {
		t.Fatalf("the locked week was dropped anyway?")
	}
	if _, err := store.Prune(ctx, ledger.PruneOptions{Consumer: "billing", Actor: "alice"}); err != nil {
		t.Fatal(err)
	}
	if n := queryInt(t, store, `select count(*) from pg_class where relname = $1 and relnamespace = current_schema()::regnamespace`, name); n != 0 {
		t.Errorf("the next prune did not drop the week")
	}
}
