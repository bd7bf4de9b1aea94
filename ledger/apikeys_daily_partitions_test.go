package ledger_test

import (
	"slices"
	"testing"
	"time"

	"github.com/replayctl/replayctl/apikey"
	"github.com/replayctl/replayctl/internal/testenv/pgtest"
	"github.com/replayctl/replayctl/ledger"
)

// apiKeyDailyBefore0037 is api_key_daily as migration 0024 made it, before it was partitioned.
const apiKeyDailyBefore0037 = `
drop table api_key_daily;
drop function api_key_daily_ensure(date, date);
drop function api_key_daily_drop_before(date);
delete from replayctl_migrations where version = 37;
create table api_key_daily (
    route        text   not null,
    client_hash  text   not null,
    day          date   not null,
    requests     bigint not null default 0,
    replays      bigint not null default 0,
    in_progress  bigint not null default 0,
    mismatches   bigint not null default 0,
    uncertain    bigint not null default 0,
    primary key (route, day, client_hash)
);
insert into api_key_daily (route, client_hash, day, requests)
select r, 'client-' || c, current_date - d, 10
  from unnest(array['POST /v1/charges', 'POST /v1/refunds']) r, generate_series(1, 3) c, generate_series(0, 99) d;
do $$ begin create role replayctl_test_api_writer nologin; exception when duplicate_object then null; end $$;
grant select, insert, update on api_key_daily to replayctl_test_api_writer;`

// A ledger in service when 0037 arrives has days of counts and an API fleet writing them under a
// least-privilege role: the migration partitions the table without copying it, every row stays
// readable, today's row keeps adding up, and the role can still write.
func TestMigrationPartitionsTheDailyCountsKeepingTheirRowsAndGrants(t *testing.T) {
	t.Parallel()
	store := pgtest.Ledger(t)
	execSQL(t, store, apiKeyDailyBefore0037)
	res, err := store.Migrate(t.Context())
	if err != nil || !slices.Equal(res.Applied, []string{"0037_api_key_daily_partitions"}) {
		t.Fatalf("migrate: %+v, %v", res, err)
	}
	if kind := queryText(t, store, `select relkind::text from pg_class where oid = 'api_key_daily'::regclass`); kind != "p" {
		t.Fatalf("api_key_daily is of kind %q after the migration, want a partitioned table", kind)
	}
	today := time.Now().UTC().Truncate(24 * time.Hour)
	counts, err := store.APIKeyDailySince(t.Context(), today.AddDate(0, 0, -200), "")
	if err != nil || len(counts) != 600 {
		t.Fatalf("%d daily counts readable after the migration (%v), want the 600 there were", len(counts), err)
	}
	add := apikey.DailyCount{Route: "POST /v1/charges", ClientHash: "client-1", Day: today, Requests: 5}
	if err := store.APIKeyDailyAdd(t.Context(), []apikey.DailyCount{add}); err != nil {
		t.Fatal(err)
	}
	if n := queryInt(t, store, `select requests from api_key_daily where route = 'POST /v1/charges' and client_hash = 'client-1' and day = current_date`); n != 15 {
		t.Errorf("today's count is %d after adding 5 to 10, want 15 (one row, added up)", n)
	}
	for _, privilege := range []string{"select", "insert", "update"} {
		if queryText(t, store, `select has_table_privilege('replayctl_test_api_writer', 'api_key_daily', $1)::text`, privilege) != "true" {
			t.Errorf("the API's role lost %s on api_key_daily in the migration", privilege)
		}
	}
}

// keys prune drops the weeks of counts that lie wholly before the retention (a drop per week, its
// disk returned) and deletes only the days before it in the week it falls in; a prune of one route
// deletes that route's days alone.
func TestKeysPruneDropsWholeWeeksOfDailyCounts(t *testing.T) {
	t.Parallel()
	store := pgtest.Ledger(t)
	// Twenty weeks of history, as a fleet that ran that long would have partitioned it.
	execSQL(t, store, `drop table api_key_daily_before`)
	execSQL(t, store, `select api_key_daily_ensure(current_date - 140, current_date + 40)`)
	execSQL(t, store, `insert into api_key_daily (route, client_hash, day, requests)
select r, 'client-' || c, current_date - d, 1
  from unnest(array['POST /v1/charges', 'POST /v1/refunds']) r, generate_series(1, 3) c, generate_series(0, 140) d`)
	execSQL(t, store, `analyze api_key_daily`)
	// The weekly partitions whose days all lie before the retention.
	weeksDue := func() int {
		return queryInt(t, store, `select count(*) from pg_inherits i join pg_class c on c.oid = i.inhrelid
 where i.inhparent = 'api_key_daily'::regclass
   and substring(pg_get_expr(c.relpartbound, c.oid) from 'TO \(''([0-9-]+)''\)')::date <= current_date - 30`)
	}
	if n := weeksDue(); n < 14 {
		t.Fatalf("%d weekly partitions before the retention to start with, want the 14 or more of twenty weeks", n)
	}
	due := queryInt(t, store, `select count(*) from api_key_daily where day < current_date - 30`)

	r, err := store.APIKeysPrune(t.Context(), ledger.APIKeysPruneOptions{CountsRetention: 30 * 24 * time.Hour, Actor: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if r.DailyCounts != int64(due) {
		t.Errorf("the prune reports %d daily counts removed, want the %d before the retention", r.DailyCounts, due)
	}
	if n := queryInt(t, store, `select count(*) from api_key_daily where day < current_date - 30`); n != 0 {
		t.Errorf("%d daily counts before the retention remain", n)
	}
	if n := queryInt(t, store, `select count(*) from api_key_daily`); n != 6*31 {
		t.Errorf("%d daily counts remain, want the 186 of the last 31 days", n)
	}
	if n := weeksDue(); n != 0 {
		t.Errorf("%d weekly partitions wholly before the retention remain: they were emptied row by row, not dropped", n)
	}
	if n := queryInt(t, store, `select count(*) from api_key_daily_default`); n != 0 {
		t.Errorf("%d daily counts in the default partition: the weeks were not made ahead", n)
	}

	one, err := store.APIKeysPrune(t.Context(), ledger.APIKeysPruneOptions{Route: "POST /v1/refunds", CountsRetention: 7 * 24 * time.Hour, Actor: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if one.DailyCounts != 3*23 {
		t.Errorf("a prune of one route removed %d counts, want that route's 69 of the days before its retention", one.DailyCounts)
	}
	if n := queryInt(t, store, `select count(*) from api_key_daily where route = 'POST /v1/charges'`); n != 3*31 {
		t.Errorf("the other route has %d counts left, want its 93", n)
	}
}
