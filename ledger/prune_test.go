package ledger_test

import (
	"context"
	"errors"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/replayctl/replayctl/apikey"
	"github.com/replayctl/replayctl/internal/testenv/pgtest"
	"github.com/replayctl/replayctl/ledger"
)

// lifecycleRows are n effects rows of consumer named prefix0001, prefix0002, ... under version,
// with replay_until and evidence_until at now() plus the given intervals ("-1 day"; empty for
// NULL), request and result hashes derived from the event ID, and a result body unless noBody.
type lifecycleRows struct {
	consumer, prefix, state string
	n, version              int
	replayIn, evidenceIn    string
	noBody                  bool
	job                     string
}

const lifecycleInsert = `
insert into effects (consumer, event_id, effect_version, state, request_hash, result_hash, result_body,
                     replay_until, evidence_until, job_id)
select $1, $2::text || lpad(i::text, 4, '0'), $3, $4, 'sha256:req-' || $2::text || i, 'sha256:res-' || $2::text || i,
       case when $5::boolean then jsonb_build_object('n', i) end, now() + $6::interval, now() + $7::interval, $8
  from generate_series(1, $9::int) i`

func seedRows(t *testing.T, store *ledger.Store, rows ...lifecycleRows) {
	t.Helper()
	orNull := func(s string) any {
		if s == "" {
			return nil
		}
		return s
	}
	for _, r := range rows {
		version := max(r.version, 1)
		execSQL(t, store, lifecycleInsert, r.consumer, r.prefix, version, r.state, !r.noBody,
			orNull(r.replayIn), orNull(r.evidenceIn), orNull(r.job), r.n)
	}
}

// countRows counts the consumer's effects rows whose event ID starts with prefix, and how many
// of them still have a result body and a result hash.
func countRows(t *testing.T, store *ledger.Store, consumer, prefix string) (rows, bodies, hashes int) {
	t.Helper()
	err := store.Pool().QueryRow(t.Context(), `
select count(*), count(result_body), count(result_hash) from effects
 where consumer = $1 and starts_with(event_id, $2)`, consumer, prefix).Scan(&rows, &bodies, &hashes)
	if err != nil {
		t.Fatal(err)
	}
	return rows, bodies, hashes
}

// ledgerSnapshot fingerprints every column of every effects, effect_incidents and audit row: equal
// snapshots mean nothing changed.
func ledgerSnapshot(t *testing.T, store *ledger.Store) string {
	t.Helper()
	var s string
	err := store.Pool().QueryRow(t.Context(), `
select md5(coalesce((select string_agg(e::text, ',' order by consumer, event_id, effect_version) from effects e), '') ||
           coalesce((select string_agg(i::text, ',' order by id) from effect_incidents i), '') ||
           coalesce((select string_agg(a::text, ',' order by id) from audit a), ''))`).Scan(&s)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// ledgerOutcome fingerprints what prune decides (which rows exist, which keep a body, every
// hash), leaving out timestamps, so two ledgers seeded alike compare equal after pruning.
func ledgerOutcome(t *testing.T, store *ledger.Store) string {
	t.Helper()
	var s string
	err := store.Pool().QueryRow(t.Context(), `
select coalesce(string_agg(concat_ws('|', consumer, event_id, effect_version, state, result_hash, result_body is null),
                           ',' order by consumer, event_id, effect_version), '')
  from effects`).Scan(&s)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// setJobStatus records job id with targets and moves it to status.
func setJobStatus(t *testing.T, store *ledger.Store, id, status string, targets ...string) {
	t.Helper()
	execTargets(t, store, id, targets...)
	execSQL(t, store, `update jobs set status = $2 where id = $1`, id, status)
}

// seedBilling is a billing ledger with every kind of row prune must tell apart; shipping has rows
// past every date too. Pruned for billing: 8 rows tombstoned (old, recon, donerow) and 7 bodies
// (warm).
func seedBilling(t *testing.T, store *ledger.Store) {
	t.Helper()
	seedRows(t, store,
		lifecycleRows{consumer: "billing", prefix: "old-", state: "completed", n: 5, replayIn: "-40 days", evidenceIn: "-1 day"},
		lifecycleRows{consumer: "billing", prefix: "recon-", state: "reconciled", n: 1, replayIn: "-40 days", evidenceIn: "-1 day"},
		lifecycleRows{consumer: "billing", prefix: "warm-", state: "completed", n: 7, replayIn: "-1 day", evidenceIn: "300 days"},
		lifecycleRows{consumer: "billing", prefix: "fresh-", state: "completed", n: 3, replayIn: "10 days", evidenceIn: "300 days"},
		lifecycleRows{consumer: "billing", prefix: "bare-", state: "completed", n: 2, replayIn: "-1 day", evidenceIn: "300 days", noBody: true},
		lifecycleRows{consumer: "billing", prefix: "unc-", state: "uncertain", n: 2, replayIn: "-40 days", evidenceIn: "-1 day"},
		lifecycleRows{consumer: "billing", prefix: "proc-", state: "processing", n: 1, replayIn: "-40 days", evidenceIn: "-1 day"},
		lifecycleRows{consumer: "billing", prefix: "recv-", state: "received", n: 1, noBody: true},
		// Rows of a job still executing (its own rows and a target's older row) and of a paused
		// job's target stay; a finished job's rows go.
		lifecycleRows{consumer: "billing", prefix: "jobrow-", state: "completed", n: 2, version: 2, replayIn: "-40 days", evidenceIn: "-1 day", job: "job-exec"},
		lifecycleRows{consumer: "billing", prefix: "tgt-", state: "completed", n: 1, replayIn: "-40 days", evidenceIn: "-1 day"},
		lifecycleRows{consumer: "billing", prefix: "ptgt-", state: "completed", n: 1, replayIn: "-1 day", evidenceIn: "300 days"},
		lifecycleRows{consumer: "billing", prefix: "donerow-", state: "completed", n: 2, version: 2, replayIn: "-40 days", evidenceIn: "-1 day", job: "job-done"},
		lifecycleRows{consumer: "shipping", prefix: "ship-", state: "completed", n: 4, replayIn: "-40 days", evidenceIn: "-1 day"},
	)
	setJobStatus(t, store, "job-exec", "executing", "tgt-0001")
	setJobStatus(t, store, "job-paused", "paused", "ptgt-0001")
	setJobStatus(t, store, "job-done", "completed", "donerow-0001", "donerow-0002")
}

func TestPruneDryRunCountsWhatTheRunThenDoes(t *testing.T) {
	t.Parallel()
	store := pgtest.Ledger(t)
	seedBilling(t, store)
	opts := ledger.PruneOptions{Consumer: "billing", Actor: "alice", IncidentRetention: 90 * 24 * time.Hour}

	before := ledgerSnapshot(t, store)
	dry, err := store.PruneCount(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if after := ledgerSnapshot(t, store); after != before {
		t.Fatal("a dry run changed the ledger")
	}
	want := []ledger.PruneCounts{{Consumer: "billing", Tombstoned: 8, Bodies: 7}}
	if !dry.DryRun || !slices.Equal(countsOnly(dry.Consumers), want) || dry.Total.Tombstoned != 8 || dry.Total.Rows != 0 || dry.Total.Bodies != 7 || dry.Incidents != 0 {
		t.Fatalf("dry run %+v, want billing 8 rows tombstoned and 7 bodies", dry)
	}

	got, err := store.Prune(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if got.DryRun || !slices.Equal(countsOnly(got.Consumers), countsOnly(dry.Consumers)) || got.Total != dry.Total || got.Incidents != 0 || got.Interrupted {
		t.Fatalf("prune %+v, want what the dry run counted: %+v", got, dry)
	}
	if got.Batches != 2 {
		t.Errorf("%d batches, want 2 (one of rows, one of bodies)", got.Batches)
	}

	// Expiry is a state, not a deletion (issue 15): the rows past evidence_until stay as
	// tombstones, so a copy of the event arriving later is not taken for a new one.
	for _, expired := range []struct{ prefix, finalState string }{{"old-", "completed"}, {"recon-", "reconciled"}, {"donerow-", "completed"}} {
		n := queryInt(t, store, `select count(*) from effects where consumer = 'billing' and starts_with(event_id, $1)
   and state = 'expired' and final_state = $2 and result_body is null and last_error is null
   and result_hash like 'sha256:res-%' and request_hash like 'sha256:req-%' and evidence_until is not null`, expired.prefix, expired.finalState)
		if total, _, _ := countRows(t, store, "billing", expired.prefix); n != total || n == 0 {
			t.Errorf("%s: %d of %d rows past evidence_until are tombstones keeping their hashes and dates, final state %s", expired.prefix, n, total, expired.finalState)
		}
	}
	if n, bodies, hashes := countRows(t, store, "billing", "warm-"); n != 7 || bodies != 0 || hashes != 7 {
		t.Errorf("warm rows past replay_until: %d rows, %d bodies, %d hashes; want 7 rows keeping their hashes, no body", n, bodies, hashes)
	}
	for _, kept := range []struct {
		prefix string
		n      int
		bodies int
	}{{"fresh-", 3, 3}, {"bare-", 2, 0}, {"unc-", 2, 2}, {"proc-", 1, 1}, {"recv-", 1, 0}, {"jobrow-", 2, 2}, {"tgt-", 1, 1}, {"ptgt-", 1, 1}} {
		if n, bodies, hashes := countRows(t, store, "billing", kept.prefix); n != kept.n || bodies != kept.bodies || hashes != kept.n {
			t.Errorf("%s: %d rows, %d bodies, %d hashes; want %d rows and %d bodies untouched", kept.prefix, n, bodies, hashes, kept.n, kept.bodies)
		}
	}
	if n, bodies, _ := countRows(t, store, "shipping", "ship-"); n != 4 || bodies != 4 {
		t.Errorf("pruning billing changed shipping: %d rows, %d bodies left of 4", n, bodies)
	}

	var actor, details string
	if err := store.Pool().QueryRow(t.Context(), `select actor, details::text from audit where action = 'ledger.prune'`).Scan(&actor, &details); err != nil {
		t.Fatalf("one audit entry of the prune: %v", err)
	}
	for _, want := range []string{`"tombstoned": 8`, `"rows": 0`, `"bodies": 7`, `"scope": "consumer billing"`, `"interrupted": false`,
		`"billing": {"rows": 0, "bodies": 7, "compacted": 0, "tombstoned": 8, "tombstonesBefore": "`, `"tombstoneRetentionFrom": "default"}`} {
		if actor != "alice" || !strings.Contains(details, want) {
			t.Errorf("audit by %s lacks %s: %s", actor, want, details)
		}
	}

	again, err := store.PruneCount(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if again.Changes() != 0 || len(again.Consumers) != 0 {
		t.Errorf("a dry run after the prune still counts %+v", again)
	}
}

func TestPruneInterruptedAfterOneBatchThenRerunEndsInTheSameState(t *testing.T) {
	t.Parallel()
	seed := func(store *ledger.Store) {
		seedRows(t, store,
			lifecycleRows{consumer: "billing", prefix: "old-", state: "completed", n: 10, replayIn: "-40 days", evidenceIn: "-1 day"},
			lifecycleRows{consumer: "billing", prefix: "warm-", state: "completed", n: 10, replayIn: "-1 day", evidenceIn: "300 days"},
			lifecycleRows{consumer: "billing", prefix: "unc-", state: "uncertain", n: 2, replayIn: "-40 days", evidenceIn: "-1 day"})
	}
	opts := ledger.PruneOptions{Consumer: "billing", Actor: "alice", BatchSize: 3}

	interrupted := pgtest.Ledger(t)
	seed(interrupted)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	stop := opts
	stop.Progress = func(done, total int64) { cancel() }
	r, err := interrupted.Prune(ctx, stop)
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "run the same command again to continue") {
		t.Fatalf("prune cancelled after its first batch: %v, want context.Canceled saying to run it again", err)
	}
	if !r.Interrupted || r.Batches != 1 || r.Total.Tombstoned != 3 || r.Total.Bodies != 0 {
		t.Fatalf("interrupted report %+v, want one batch of 3 rows tombstoned", r)
	}
	if n := queryInt(t, interrupted, `select count(*) from effects where starts_with(event_id, 'old-') and state <> 'expired'`); n != 7 {
		t.Fatalf("%d old rows not yet tombstones after one committed batch of 3, want 7", n)
	}
	var details string
	if err := interrupted.Pool().QueryRow(t.Context(), `select details::text from audit where action = 'ledger.prune'`).Scan(&details); err != nil ||
		!strings.Contains(details, `"interrupted": true`) || !strings.Contains(details, `"tombstoned": 3`) {
		t.Fatalf("audit of the interrupted prune: %q, %v", details, err)
	}

	rerun, err := interrupted.Prune(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if rerun.Total.Tombstoned != 7 || rerun.Total.Bodies != 10 {
		t.Errorf("the rerun pruned %+v, want the 7 rows and 10 bodies left", rerun.Total)
	}

	whole := pgtest.Ledger(t)
	seed(whole)
	once, err := whole.Prune(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if once.Total.Tombstoned != 10 || once.Total.Bodies != 10 || once.Batches != 8 {
		t.Errorf("one uninterrupted prune: %+v in %d batches, want 10 rows and 10 bodies in 4 + 4 batches of at most 3", once.Total, once.Batches)
	}
	if a, b := ledgerOutcome(t, interrupted), ledgerOutcome(t, whole); a != b {
		t.Errorf("interrupted and rerun:\n%s\nuninterrupted:\n%s", a, b)
	}
	if n := queryInt(t, interrupted, `select count(*) from audit where action = 'ledger.prune'`); n != 2 {
		t.Errorf("%d audit entries for an interrupted prune and its rerun, want 2", n)
	}
}

func TestPruneAllConsumersIncidentsAndAsOf(t *testing.T) {
	t.Parallel()
	store := pgtest.Ledger(t)
	seedRows(t, store,
		lifecycleRows{consumer: "billing", prefix: "old-", state: "completed", n: 2, replayIn: "-40 days", evidenceIn: "-1 day"},
		lifecycleRows{consumer: "shipping", prefix: "old-", state: "completed", n: 3, replayIn: "-40 days", evidenceIn: "-1 day"},
		lifecycleRows{consumer: "shipping", prefix: "soon-", state: "completed", n: 4, replayIn: "-1 day", evidenceIn: "2 days"})
	execSQL(t, store, `
insert into effect_incidents (at, consumer, event_id, effect_version, kind, dedup_key)
select now(), 'billing', 'evt-' || i, 1, 'payload_conflict', 'k' || i from generate_series(1, 5) i`)
	execSQL(t, store, `update effect_incidents set at = now() - interval '100 days' where id <= 3`)
	opts := ledger.PruneOptions{AllConsumers: true, Actor: "alice", IncidentRetention: 90 * 24 * time.Hour}

	ahead := opts
	var now time.Time
	if err := store.Pool().QueryRow(t.Context(), "select now()").Scan(&now); err != nil {
		t.Fatal(err)
	}
	ahead.AsOf = now.Add(3 * 24 * time.Hour)
	dry, err := store.PruneCount(t.Context(), ahead)
	if err != nil {
		t.Fatal(err)
	}
	want := []ledger.PruneCounts{{Consumer: "billing", Tombstoned: 2}, {Consumer: "shipping", Tombstoned: 7}}
	if !slices.Equal(countsOnly(dry.Consumers), want) || dry.Incidents != 3 {
		t.Errorf("dry run three days ahead: %+v, want %v and the 3 incidents older than 87 days", dry, want)
	}

	before := ledgerSnapshot(t, store)
	if _, err := store.Prune(t.Context(), ahead); !errors.Is(err, ledger.ErrPruneAsOfFuture) || !strings.Contains(err.Error(), "--dry-run") {
		t.Fatalf("a real prune three days ahead: %v, want ErrPruneAsOfFuture pointing at --dry-run", err)
	}
	if ledgerSnapshot(t, store) != before {
		t.Fatal("a refused prune changed the ledger")
	}

	got, err := store.Prune(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	want = []ledger.PruneCounts{{Consumer: "billing", Tombstoned: 2}, {Consumer: "shipping", Tombstoned: 3, Bodies: 4}}
	if !slices.Equal(countsOnly(got.Consumers), want) || got.Incidents != 3 {
		t.Errorf("prune of all consumers: %+v, want %v and 3 incidents", got, want)
	}
	if n := queryInt(t, store, `select count(*) from effect_incidents`); n != 2 {
		t.Errorf("%d incidents left, want the 2 younger than 90 days", n)
	}
}

// A tombstone outlives the evidence window by the retention the operator sets, and only then goes.
func TestPruneDeletesTombstonesOnlyPastTheirRetention(t *testing.T) {
	t.Parallel()
	store := pgtest.Ledger(t)
	seedRows(t, store,
		lifecycleRows{consumer: "billing", prefix: "ancient-", state: "completed", n: 3, replayIn: "-40 days", evidenceIn: "-10 days"},
		lifecycleRows{consumer: "billing", prefix: "recent-", state: "completed", n: 2, replayIn: "-40 days", evidenceIn: "-1 day"})
	week := ledger.PruneOptions{Consumer: "billing", Actor: "alice", TombstoneRetention: 7 * 24 * time.Hour}

	first, err := store.Prune(t.Context(), week)
	if err != nil {
		t.Fatal(err)
	}
	if first.Total != (ledger.PruneCounts{Tombstoned: 5}) {
		t.Fatalf("first prune %+v, want the 5 rows past evidence_until tombstoned and none deleted", first.Total)
	}
	byDefault, err := store.PruneCount(t.Context(), ledger.PruneOptions{Consumer: "billing"})
	if err != nil {
		t.Fatal(err)
	}
	if byDefault.Changes() != 0 || !byDefault.TombstonesBefore.Before(byDefault.AsOf.Add(-4*365*24*time.Hour)) {
		t.Fatalf("with the default retention %+v (tombstones before %s), want nothing due for years", byDefault.Total, byDefault.TombstonesBefore)
	}
	second, err := store.Prune(t.Context(), week)
	if err != nil {
		t.Fatal(err)
	}
	if second.Total != (ledger.PruneCounts{Rows: 3}) {
		t.Fatalf("second prune %+v, want the 3 tombstones whose evidence ended over a week ago deleted", second.Total)
	}
	if n, _, _ := countRows(t, store, "billing", "ancient-"); n != 0 {
		t.Errorf("%d tombstones past their retention survived", n)
	}
	if n := queryInt(t, store, `select count(*) from effects where starts_with(event_id, 'recent-') and state = 'expired'`); n != 2 {
		t.Errorf("%d recent tombstones left, want 2", n)
	}
}

// A consumer's tombstones leave at the retention its SDK registered; another consumer's, which
// registered none, stay for the default five years; --tombstone-retention overrides both.
func TestPruneKeepsEachConsumersTombstonesForTheRetentionItRegistered(t *testing.T) {
	t.Parallel()
	store := pgtest.Ledger(t)
	seedRows(t, store,
		lifecycleRows{consumer: "billing", prefix: "ancient-", state: "completed", n: 3, replayIn: "-60 days", evidenceIn: "-20 days"},
		lifecycleRows{consumer: "billing", prefix: "recent-", state: "completed", n: 2, replayIn: "-60 days", evidenceIn: "-5 days"},
		lifecycleRows{consumer: "shipping", prefix: "ancient-", state: "completed", n: 4, replayIn: "-60 days", evidenceIn: "-20 days"})
	if err := store.RetentionPoliciesRegister(t.Context(), []apikey.Policy{{Kind: apikey.PolicyConsumer, Name: "billing",
		ReplayWindow: 24 * time.Hour, EvidenceWindow: 48 * time.Hour, TombstoneWindow: 10 * 24 * time.Hour, RegisteredBy: "consumer billing"}}); err != nil {
		t.Fatal(err)
	}
	// Without --compact-after they stay whole; compact ones leave the same way
	// (TestPruneCompactsTombstonesAndALateCopyStillMeetsThem).
	all := ledger.PruneOptions{AllConsumers: true, Actor: "alice"}
	if first, err := store.Prune(t.Context(), all); err != nil || first.Total != (ledger.PruneCounts{Tombstoned: 9, Bodies: 0}) {
		t.Fatalf("first prune %+v, %v: want the 9 rows past evidence_until tombstoned", first, err)
	}
	dry, err := store.PruneCount(t.Context(), all)
	if err != nil {
		t.Fatal(err)
	}
	if want := []ledger.PruneCounts{{Consumer: "billing", Rows: 3}}; !slices.Equal(countsOnly(dry.Consumers), want) ||
		dry.Consumers[0].TombstoneRetentionFrom != ledger.TombstoneRetentionFromPolicy ||
		dry.Consumers[0].TombstonesBefore.Sub(dry.AsOf.Add(-10*24*time.Hour)).Abs() > time.Second {
		t.Fatalf("dry run %+v, want billing's 3 tombstones older than its registered 10 days and none of shipping's", dry.Consumers)
	}
	got, err := store.Prune(t.Context(), all)
	if err != nil {
		t.Fatal(err)
	}
	if got.Total != (ledger.PruneCounts{Rows: 3}) {
		t.Fatalf("prune %+v, want billing's 3 old tombstones deleted", got.Total)
	}
	if n := queryInt(t, store, `select count(*) from effects where consumer = 'shipping' and state = 'expired'`); n != 4 {
		t.Errorf("%d of shipping's tombstones left, want its 4: it registered no retention, so the default five years hold", n)
	}
	override, err := store.PruneCount(t.Context(), ledger.PruneOptions{AllConsumers: true, TombstoneRetention: 7 * 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if want := []ledger.PruneCounts{{Consumer: "shipping", Rows: 4}}; !slices.Equal(countsOnly(override.Consumers), want) ||
		override.Consumers[0].TombstoneRetentionFrom != ledger.TombstoneRetentionFromOption {
		t.Errorf("with --tombstone-retention 7d: %+v, want shipping's 4 (billing's 2 recent ones are 5 days past)", override.Consumers)
	}
}

// countsOnly drops each consumer's tombstone horizon, which follows the clock, to compare counts.
func countsOnly(cs []ledger.PruneCounts) []ledger.PruneCounts {
	out := make([]ledger.PruneCounts, len(cs))
	for i, c := range cs {
		out[i] = ledger.PruneCounts{Consumer: c.Consumer, Tombstoned: c.Tombstoned, Rows: c.Rows, Compacted: c.Compacted, Bodies: c.Bodies}
	}
	return out
}

func TestPruneOfAnUnknownConsumerNamesTheKnownOnes(t *testing.T) {
	t.Parallel()
	store := pgtest.Ledger(t)
	seedRows(t, store, lifecycleRows{consumer: "billing", prefix: "old-", state: "completed", n: 1, evidenceIn: "-1 day"})
	for name, run := range map[string]func(context.Context, ledger.PruneOptions) (*ledger.PruneReport, error){
		"PruneCount": store.PruneCount, "Prune": store.Prune,
	} {
		_, err := run(t.Context(), ledger.PruneOptions{Consumer: "biling", Actor: "alice"})
		if !errors.Is(err, ledger.ErrUnknownConsumer) || !strings.Contains(err.Error(), `consumer "biling"`) ||
			!strings.Contains(err.Error(), "known consumers: billing") {
			t.Errorf("%s of a misspelt consumer: %v", name, err)
		}
	}
	if n, _, _ := countRows(t, store, "billing", "old-"); n != 1 {
		t.Error("a refused prune deleted a row")
	}
}

// BenchmarkLifecycleMillionRows measures one dry run, one prune and one stats report on a ledger
// of $REPLAYCTL_BENCH_ROWS (default 1,000,000) billing rows: a fifth past evidence_until, 30 %
// past replay_until only, the rest fresh, each with a 200-byte result body. Run it with
//
//	go test ./ledger/ -run '^$' -bench BenchmarkLifecycleMillionRows -benchtime 1x
func BenchmarkLifecycleMillionRows(b *testing.B) {
	n := 1_000_000
	if v, err := strconv.Atoi(os.Getenv("REPLAYCTL_BENCH_ROWS")); err == nil && v > 0 {
		n = v
	}
	store := pgtest.Ledger(b)
	ctx := b.Context()
	if _, err := store.Pool().Exec(ctx, `set statement_timeout = 0`); err != nil {
		b.Fatal(err)
	}
	_, err := store.Pool().Exec(ctx, `
insert into effects (consumer, event_id, effect_version, state, request_hash, result_hash, result_body,
                     replay_until, evidence_until, created_at)
select 'billing', 'evt-' || lpad(i::text, 8, '0'), 1, 'completed', 'sha256:' || i, 'sha256:r' || i,
       jsonb_build_object('receipt', repeat('x', 180), 'n', i),
       now() + case when i % 10 < 5 then interval '-1 day' else interval '10 days' end,
       now() + case when i % 10 < 2 then interval '-1 day' else interval '300 days' end,
       now() - (i % 1440) * interval '1 minute'
  from generate_series(1, $1::int) i`, n)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := store.Pool().Exec(ctx, `analyze effects`); err != nil {
		b.Fatal(err)
	}
	opts := ledger.PruneOptions{Consumer: "billing", Actor: "bench"}
	for b.Loop() {
		start := time.Now()
		dry, err := store.PruneCount(ctx, opts)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(time.Since(start).Seconds(), "count-s")
		start = time.Now()
		r, err := store.Prune(ctx, opts)
		if err != nil {
			b.Fatal(err)
		}
		pruned := time.Since(start)
		b.ReportMetric(pruned.Seconds(), "prune-s")
		b.ReportMetric(float64(r.Changes())/pruned.Seconds(), "changes/s")
		if r.Total != dry.Total {
			b.Fatalf("pruned %+v, counted %+v", r.Total, dry.Total)
		}
		start = time.Now()
		if _, err := store.LedgerStats(ctx, ledger.StatsOptions{Consumer: "billing", Window: 24 * time.Hour}); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(time.Since(start).Seconds(), "stats-s")
	}
}
