package ledgercmd

import (
	"testing"
	"time"

	"github.com/replayctl/replayctl/history"
	"github.com/replayctl/replayctl/internal/cli/clitest"
	"github.com/replayctl/replayctl/internal/iostreams"
)

func TestLedgerImportFlagsReachTheRunWithoutOpeningTheLedger(t *testing.T) {
	var got *LedgerImportOptions
	err := clitest.Run(NewCmdLedgerImport(clitest.Factory(t), func(o *LedgerImportOptions) error { got = o; return nil }),
		"--consumer", "billing", "--effect-version", "3", "--format", "csv", "--dry-run", "--batch-size", "1000", "old.csv")
	if err != nil || got == nil {
		t.Fatalf("ledger import: %v", err)
	}
	r := got.Request
	if r.Consumer != "billing" || r.EffectVersion != 3 || r.Format != "csv" || !r.DryRun || r.BatchSize != 1000 || r.Path != "old.csv" || r.Actor != "bob" {
		t.Fatalf("options %+v", r)
	}
	if err := clitest.Run(NewCmdLedgerImport(clitest.Factory(t), func(*LedgerImportOptions) error { return nil }), "--consumer", "billing"); err == nil {
		t.Fatal("no file: accepted")
	}
}

// The summary of an import, rendered from a literal report.
func TestLedgerImportRendersALiteralReport(t *testing.T) {
	ios, _, out, _ := iostreams.Test()
	oldest, newest := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	err := printImport(&LedgerImportOptions{IO: ios}, &history.Report{Consumer: "billing", File: "old.csv", FileDigest: "sha256:ab", Records: 10,
		Imported: 7, AlreadyInLedger: 3, Completed: 9, Uncertain: 1, WithoutFingerprint: 10, OldestProcessedAt: &oldest, NewestProcessedAt: &newest,
		HistoryStartsAt: &oldest, Batches: 1})
	if err != nil {
		t.Fatal(err)
	}
	want := "imported old.csv into consumer billing in 1 batches:\n" +
		"  records            10 (9 completed, 1 uncertain)\n" +
		"  new to the ledger  7\n" +
		"  already there      3 (left as the ledger had them)\n" +
		"  without fingerprint 10 (the event ID alone decides)\n" +
		"  processed          2025-01-01T00:00:00Z to 2026-11-30T00:00:00Z\n" +
		"  history starts at  2025-01-01T00:00:00Z (plan warns about DLQ messages older than this)\n" +
		"  file               sha256:ab\n"
	if out.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", out.String(), want)
	}
}
