package ledger_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/replayctl/replayctl/internal/testenv/pgtest"
	"github.com/replayctl/replayctl/ledger"
)

// The statements the SDK sends for every message must find their rows by the primary key under
// a generic plan, on a table whose statistics say nothing yet (a new consumer, a new version).
// Otherwise each statement walks every row of the version, or every dead entry of a partial
// index, and a replay slows as it goes: the batched claim's insert did, and held the whole
// consumer at ~330 events/s however many handlers ran (docs/benchmarks.md).
func TestSDKStatementsUseThePrimaryKeyUnderGenericPlans(t *testing.T) {
	t.Parallel()
	store := pgtest.Ledger(t)
	// Thousands of rows of one version, none analyzed: what a replay's first minutes look like.
	if _, err := store.Pool().Exec(t.Context(), `insert into effects (consumer, event_id, effect_version, state, request_hash, request_hash_alg, lease_owner, lease_expires_at)
		select 'billing', 'evt-' || i, 2, case when i % 3 = 0 then 'processing' else 'completed' end, 'sha256:x', 'canonical-json-v1', 'o', now()
		  from generate_series(1, 5000) i`); err != nil {
		t.Fatal(err)
	}
	assertKeyLookupPlans(t, store)
}

// A statement an SDK store's connection prepared while the table was empty still looks its rows
// up by key once the table has grown, without an analyze in between: its connections plan each
// execution for the table as it is (sdkPlannerSettings), where a plan kept from the empty table
// scanned it whole.
func TestAnSDKStoreReplansItsStatementsAsTheTableGrows(t *testing.T) {
	t.Parallel()
	_, url := pgtest.LedgerWithURL(t)
	sdk, err := ledger.Open(t.Context(), url, ledger.ForHandlers(64))
	if err != nil {
		t.Fatal(err)
	}
	defer sdk.Close()
	ctx := t.Context()
	conn, err := sdk.Pool().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "prepare sdk_read as "+ledger.SDKStatements["effectsForEvents"]); err != nil {
		t.Fatal(err)
	}
	// More than the five custom plans after which PostgreSQL may settle on a generic one.
	for range 8 {
		if _, err := conn.Exec(ctx, `execute sdk_read('{billing}', '{evt-1}')`); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := conn.Exec(ctx, `insert into effects (consumer, event_id, effect_version, state, request_hash, request_hash_alg)
		select 'billing', 'evt-' || i, 2, 'completed', 'sha256:x', 'canonical-json-v1' from generate_series(1, 20000) i`); err != nil {
		t.Fatal(err)
	}
	text, err := explain(ctx, conn, `explain execute sdk_read('{billing,billing}', '{evt-1,evt-2}')`)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(text, "Seq Scan on effects") || !strings.Contains(text, "effects_pkey") {
		t.Errorf("after the table grew, the read is planned as:\n%s", text)
	}
	var mode string
	if err := conn.QueryRow(ctx, "show plan_cache_mode").Scan(&mode); err != nil || mode != "force_custom_plan" {
		t.Errorf("plan_cache_mode on an SDK store's connection is %q (%v), want force_custom_plan", mode, err)
	}
}

func assertKeyLookupPlans(t *testing.T, store *ledger.Store) {
	t.Helper()
	ctx := t.Context()
	conn, err := store.Pool().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `set plan_cache_mode = force_generic_plan`); err != nil {
		t.Fatal(err)
	}
	param := regexp.MustCompile(`\$(\d+)`)
	for name, sql := range ledger.SDKStatements {
		params := 0
		for _, m := range param.FindAllStringSubmatch(sql, -1) {
			var n int
			fmt.Sscan(m[1], &n)
			params = max(params, n)
		}
		stmt := "sdk_plan_" + strings.ToLower(name)
		if _, err := conn.Exec(ctx, "prepare "+stmt+" as "+sql); err != nil {
			t.Fatalf("%s: prepare: %v", name, err)
		}
		nulls := strings.TrimSuffix(strings.Repeat("null, ", params), ", ")
		text, err := explain(ctx, conn, "explain execute "+stmt+"("+nulls+")")
		if err != nil {
			t.Fatalf("%s: explain: %v", name, err)
		}
		for _, bad := range []string{"Seq Scan on effects", "effects_consumer_version_job_idx", "effects_attention_idx", "Seq Scan on effect_tombstones"} {
			if strings.Contains(text, bad) {
				t.Errorf("%s: the generic plan uses %s instead of the primary key:\n%s", name, bad, text)
			}
		}
		if !strings.Contains(text, "effects_pkey") {
			t.Errorf("%s: the generic plan does not use effects_pkey:\n%s", name, text)
		}
	}
}

// explain runs an explain statement and returns its plan as text.
func explain(ctx context.Context, conn *pgxpool.Conn, sql string) (string, error) {
	rows, err := conn.Query(ctx, sql)
	if err != nil {
		return "", err
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return strings.Join(lines, "\n"), err
}
