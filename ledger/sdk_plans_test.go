package ledger_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/replayctl/replayctl/internal/testenv/pgtest"
	"github.com/replayctl/replayctl/ledger"
)

// The statements the SDK sends for every message must find their rows by the primary key under
// a generic plan, on a table whose statistics say nothing yet (a new consumer, a new version).
// Otherwise each statement walks every row of the version, or every dead entry of a partial
// index, and a replay slows as it goes: the batched claim's insert did, and held the whole
// consumer at ~330 events/s however many handlers ran (docs/benchmarks.md).
func TestSDKStatementsUseThePrimaryKeyUnderGenericPlans(t *testing.T) {
	store := pgtest.Ledger(t)
	ctx := t.Context()
	conn, err := store.Pool().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	// Thousands of rows of one version, none analyzed: what a replay's first minutes look like.
	if _, err := conn.Exec(ctx, `insert into effects (consumer, event_id, effect_version, state, request_hash, request_hash_alg, lease_owner, lease_expires_at)
		select 'billing', 'evt-' || i, 2, case when i % 3 = 0 then 'processing' else 'completed' end, 'sha256:x', 'canonical-json-v1', 'o', now()
		  from generate_series(1, 5000) i`); err != nil {
		t.Fatal(err)
	}
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
		rows, err := conn.Query(ctx, "explain execute "+stmt+"("+nulls+")")
		if err != nil {
			t.Fatalf("%s: explain: %v", name, err)
		}
		var plan []string
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, line)
		}
		if err := rows.Err(); err != nil {
			t.Fatalf("%s: explain: %v", name, err)
		}
		text := strings.Join(plan, "\n")
		for _, bad := range []string{"Seq Scan on effects", "effects_consumer_version_job_idx", "effects_attention_idx"} {
			if strings.Contains(text, bad) {
				t.Errorf("%s: the generic plan uses %s instead of the primary key:\n%s", name, bad, text)
			}
		}
		if !strings.Contains(text, "effects_pkey") {
			t.Errorf("%s: the generic plan does not use effects_pkey:\n%s", name, text)
		}
	}
}
