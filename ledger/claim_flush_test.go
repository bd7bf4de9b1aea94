package ledger_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/replayctl/replayctl/internal/testenv/pgtest"
	"github.com/replayctl/replayctl/ledger"
)

// A claim's transaction commits without waiting for the WAL flush, and only the claim's: the
// connection's next statement, such as the "call started" mark that must be on disk before the
// handler calls out, commits synchronously again. A setting that outlived the claim would make
// every later mark on that pooled connection skippable by a crash.
func TestAClaimAloneCommitsWithoutWaitingForTheFlush(t *testing.T) {
	t.Parallel()
	_, url := pgtest.LedgerWithURL(t)
	// One connection: every claim and every look below shares it.
	sdk, err := ledger.Open(t.Context(), url+"&pool_max_conns=1", ledger.ForHandlers(8))
	if err != nil {
		t.Fatal(err)
	}
	defer sdk.Close()
	ctx := t.Context()
	synchronous := func(when string) {
		t.Helper()
		var setting string
		if err := sdk.Pool().QueryRow(ctx, "show synchronous_commit").Scan(&setting); err != nil {
			t.Fatal(err)
		}
		if setting != "on" {
			t.Errorf("%s, the connection commits with synchronous_commit %q, want on", when, setting)
		}
	}

	b := ledger.ClaimWithoutFlush()
	var inClaim string
	b.Queue("select current_setting('synchronous_commit')").QueryRow(func(row pgx.Row) error { return row.Scan(&inClaim) })
	if err := sdk.Pool().SendBatch(ctx, b).Close(); err != nil {
		t.Fatal(err)
	}
	if inClaim != "off" {
		t.Errorf("a claim's transaction commits with synchronous_commit %q, want off", inClaim)
	}
	synchronous("after a claim's batch")

	claim := func(i int) (bool, error) {
		return sdk.EffectsClaim(ctx, ledger.EffectClaim{Key: ledger.EffectKey{Consumer: "billing", EventID: fmt.Sprintf("evt-%d", i), EffectVersion: 2},
			RequestHash: "sha256:x", RequestHashAlg: "canonical-json-v1", Owner: "o", Lease: time.Minute})
	}
	if ok, err := claim(0); err != nil || !ok {
		t.Fatalf("a lone claim: %v, %v", ok, err)
	}
	synchronous("after a lone claim")
	// Claims that arrive together go out as one batched statement.
	var wg sync.WaitGroup
	for i := 1; i <= 16; i++ {
		wg.Go(func() {
			if ok, err := claim(i); err != nil || !ok {
				t.Errorf("claim %d: %v, %v", i, ok, err)
			}
		})
	}
	wg.Wait()
	if s := sdk.GroupCommitStats(); s.Batches == 0 {
		t.Errorf("no claim went out batched (%+v): the batched path was not tried", s)
	}
	synchronous("after batched claims")
}
