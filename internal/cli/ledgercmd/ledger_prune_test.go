package ledgercmd

import (
	"strings"
	"testing"
	"time"

	"github.com/replayctl/replayctl/internal/cli/clitest"
	"github.com/replayctl/replayctl/internal/iostreams"
	"github.com/replayctl/replayctl/ledger"
)

func TestLedgerPruneFlagsReachTheRunWithoutOpeningTheLedger(t *testing.T) {
	var got *LedgerPruneOptions
	err := clitest.Run(NewCmdLedgerPrune(clitest.Factory(t), func(o *LedgerPruneOptions) error { got = o; return nil }),
		"--all-consumers", "--dry-run", "--compact-after", "30d")
	if err != nil || got == nil {
		t.Fatalf("ledger prune: %v", err)
	}
	if !got.Request.AllConsumers || got.CompactAfter != "30d" || got.TombstoneRetention != "" {
		t.Fatalf("options %+v: want every consumer, --compact-after 30d and each consumer's registered tombstone retention", got)
	}
}

// A dry run's table and each consumer's tombstone horizon, rendered from a literal report.
func TestLedgerPruneRendersALiteralReport(t *testing.T) {
	ios, _, out, _ := iostreams.Test()
	asOf := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
	r := &ledger.PruneReport{DryRun: true, AsOf: asOf, AllConsumers: true, BatchSize: 10000,
		IncidentsBefore: asOf.AddDate(0, 0, -90), TombstonesBefore: asOf.AddDate(-5, 0, 0), CompactBefore: asOf.AddDate(0, 0, -7),
		Consumers: []ledger.PruneCounts{
			{Consumer: "billing", Tombstoned: 120000, Compacted: 2985000, Rows: 12, TombstonesBefore: asOf.AddDate(0, 0, -30),
				TombstoneRetentionFrom: ledger.TombstoneRetentionFromPolicy},
			{Consumer: "shipping", Bodies: 4, TombstonesBefore: asOf.AddDate(-5, 0, 0), TombstoneRetentionFrom: ledger.TombstoneRetentionFromDefault},
		}}
	r.Total = ledger.PruneCounts{Tombstoned: 120000, Compacted: 2985000, Rows: 12, Bodies: 4}
	if err := printPrune(&LedgerPruneOptions{IO: ios}, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"DRY RUN: nothing was pruned. As of 2026-12-07T00:00:00Z, ledger prune of all consumers would remove:",
		"COMPACTED",
		"billing\t120000\t2985000\t12\t0",
		"tombstones compacted: those whose evidence_until is before 2026-11-30T00:00:00Z (--compact-after)",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the report lacks %q:\n%s", want, out.String())
		}
	}
	ios, _, out, _ = iostreams.Test()
	r.CompactBefore = time.Time{}
	if err := printPrune(&LedgerPruneOptions{IO: ios}, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"tombstones compacted: none (--compact-after not given)",
		"tombstones of billing deleted: those whose evidence_until is before 2026-11-07T00:00:00Z (the retention its SDK registered)",
		"tombstones of shipping deleted: those whose evidence_until is before 2021-12-07T00:00:00Z (the default 1825d: its SDK registered none)",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the report lacks %q:\n%s", want, out.String())
		}
	}
}
