package ledger_test

import (
	"strings"
	"testing"

	"github.com/replayctl/replayctl/internal/testenv/pgtest"
	"github.com/replayctl/replayctl/ledger"
)

// The audit log shows tampering: an entry edited, one deleted, one inserted around replayctl each
// break the chain at that place, and an untouched log verifies (issue 41).
func TestTheAuditChainNamesTheFirstTamperedEntry(t *testing.T) {
	t.Parallel()
	store := pgtest.Ledger(t)
	ctx := t.Context()
	for i, action := range []string{"plan", "shadow.verdict", "approve", "execute.start", "execute.end"} {
		if err := ledger.AuditInsert(ctx, store.Pool(), ledger.AuditEntry{Actor: "alice", JobID: "job-a", Action: action,
			Details: map[string]any{"consumer": "billing", "n": i}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := ledger.AuditInsert(ctx, store.Pool(), ledger.AuditEntry{Actor: "bob", Action: "policy.set", Details: map[string]any{"consumer": "orders"}}); err != nil {
		t.Fatal(err)
	}
	verify := func() []ledger.AuditBreak {
		t.Helper()
		n, breaks, err := store.AuditVerify(ctx, "")
		if err != nil || n != 6 && n != 5 {
			t.Fatalf("verify: %d checked, %v", n, err)
		}
		return breaks
	}
	if b := verify(); len(b) != 0 {
		t.Fatalf("an untouched log: %+v", b)
	}
	ids := func() []int64 {
		rows, _ := store.Pool().Query(ctx, `select id from audit where job_id = 'job-a' order by id`)
		defer rows.Close()
		var out []int64
		for rows.Next() {
			var id int64
			_ = rows.Scan(&id)
			out = append(out, id)
		}
		return out
	}()
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := store.Pool().Exec(ctx, sql, args...); err != nil {
			t.Fatal(err)
		}
	}

	exec(`update audit set actor = 'mallory' where id = $1`, ids[1])
	if b := verify(); len(b) != 1 || b[0].ID != ids[1] || !strings.Contains(b[0].Why, "changed") {
		t.Fatalf("an edited actor: %+v", b)
	}
	exec(`update audit set actor = 'alice' where id = $1`, ids[1])

	exec(`delete from audit where id = $1`, ids[2])
	if b := verify(); len(b) != 1 || b[0].ID != ids[3] || !strings.Contains(b[0].Why, "deleted") {
		t.Fatalf("a deleted entry: %+v", b)
	}

	exec(`insert into audit (actor, job_id, action, details) values ('mallory', 'job-a', 'approve', '{"consumer": "billing"}')`)
	n, breaks, err := store.AuditVerify(ctx, "job-a")
	if err != nil || n != 5 || len(breaks) != 2 || !strings.Contains(breaks[1].Why, "written around replayctl") {
		t.Fatalf("an entry inserted by hand: %d checked, %+v, %v", n, breaks, err)
	}
}

// Every audit entry the ledger writes goes through audit_append, so it joins its chain: a
// statement inserting into audit directly would write entries log --verify reports as written
// around replayctl, and execute would refuse their jobs.
func TestNoLedgerStatementInsertsIntoAuditAroundTheChain(t *testing.T) {
	t.Parallel()
	for f, src := range ledgerSources(t) {
		if i := strings.Index(strings.ToLower(src), "insert into audit "); i >= 0 {
			t.Errorf("%s:%d inserts into audit directly; call audit_append (AuditInsert) so the entry joins its chain",
				f, strings.Count(src[:i], "\n")+1)
		}
	}
}

// Reconcile's and the expired-evidence look-up's entries, written in bulk statements, join the
// chain like the others.
func TestBulkAuditEntriesJoinTheChain(t *testing.T) {
	t.Parallel()
	store := pgtest.Ledger(t)
	if _, err := store.Pool().Exec(t.Context(), `
insert into effects (consumer, event_id, effect_version, state, request_hash, request_hash_alg, final_state, evidence_until)
values ('billing', 'evt-1', 1, 'expired', 'sha256:aa', 'canonical-json-v1', 'completed', now() - interval '1 day')`); err != nil {
		t.Fatal(err)
	}
	if n, err := store.EffectsReopenExpired(t.Context(), "billing", "evt-1", []int{1}, "look-up: no charge", "alice"); err != nil || n != 1 {
		t.Fatalf("reopen: %d %v", n, err)
	}
	n, breaks, err := store.AuditVerify(t.Context(), "")
	if err != nil || n != 1 || len(breaks) != 0 {
		t.Fatalf("the reopen's entry: %d checked, %+v, %v", n, breaks, err)
	}
}
