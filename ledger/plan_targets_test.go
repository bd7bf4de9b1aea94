package ledger_test

import (
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/replayctl/replayctl/internal/testenv/pgtest"
	"github.com/replayctl/replayctl/jobtype"
	"github.com/replayctl/replayctl/ledger"
)

// The manifest lists the targets in byte order and the state digest is taken in that order, both
// from the rows the job_targets insert hands back: scanned out of order, with IDs that byte order
// and a linguistic collation sort differently, they come back sorted, each with its own ledger
// rows in the digest, and every one is in job_targets.
func TestRecordTargetsReturnsTheTargetsInByteOrder(t *testing.T) {
	t.Parallel()
	store := pgtest.Ledger(t)
	ctx := t.Context()
	execSQL(t, store, `insert into effects (consumer, event_id, effect_version, state, request_hash, request_hash_alg)
		values ('billing', 'évt-2', 1, 'received', 'sha256:évt-2', $1)`, execAlg)
	session, err := store.PlanBegin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer session.Rollback(ctx)
	scanned := []string{"b-1", "évt-2", "B-3", "a-4", "z-5", "_-6"}
	scan := make([][]any, len(scanned))
	for i, e := range scanned {
		scan[i] = []any{int64(i + 1), e, nil, []string{"sha256:" + e}, "timeout", "billing.charge", time.Now()}
	}
	if _, err := session.ScanCopy(ctx, pgx.CopyFromRows(scan)); err != nil {
		t.Fatal(err)
	}
	if err := session.Classify(ctx, "billing", jobtype.SourceDLQ, 2, []string{execAlg}, 400*24*time.Hour, 0, ledger.ScanRepeats{Known: true}); err != nil {
		t.Fatal(err)
	}
	ids, digest, err := session.RecordTargets(ctx, "job-order")
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Sorted(slices.Values(scanned)) // Go compares strings byte by byte
	if !slices.Equal(ids, want) {
		t.Fatalf("targets %q, want %q", ids, want)
	}
	d := ledger.NewStateDigester()
	for _, id := range want {
		states := ""
		if id == "évt-2" {
			states = "1:received:sha256:évt-2"
		}
		d.Add(id, states)
	}
	if digest != d.Sum() {
		t.Errorf("state digest %s, want %s", digest, d.Sum())
	}
	var n int
	if err := session.Tx().QueryRow(ctx, `select count(*) from job_targets where job_id = 'job-order'`).Scan(&n); err != nil || n != len(want) {
		t.Errorf("%d rows in job_targets (%v), want %d", n, err, len(want))
	}
}
