package keyscmd

import (
	"strings"
	"testing"
	"time"

	"github.com/replayctl/replayctl/apikey"
	"github.com/replayctl/replayctl/health"
	"github.com/replayctl/replayctl/internal/cli/clitest"
	"github.com/replayctl/replayctl/internal/iostreams"
	"github.com/replayctl/replayctl/keys"
)

// The flags reach the run as typed, and flags alone never open the ledger: the run is replaced,
// and the factory's ledger fails the test if asked for.
func TestKeysFlagsReachTheRunWithoutOpeningTheLedger(t *testing.T) {
	var resolve *KeysResolveOptions
	err := clitest.Run(NewCmdKeysResolve(clitest.Factory(t), func(o *KeysResolveOptions) error { resolve = o; return nil }),
		"--route", "POST /v1/charges", "--key-hash", "hmac-sha256:ab", "--as", "not-happened", "--note", "no charge at the provider", "--ref", "ch_1", "--yes")
	if err != nil || resolve == nil {
		t.Fatalf("resolve: %v", err)
	}
	r := resolve.Request
	if r.Route != "POST /v1/charges" || r.KeyHash != "hmac-sha256:ab" || r.As != apikey.ResolutionNotHappened || r.ExternalRef != "ch_1" ||
		r.Note != "no charge at the provider" || r.Actor != "bob" || !resolve.Yes {
		t.Fatalf("resolve options %+v", r)
	}
	var prune *KeysPruneOptions
	err = clitest.Run(NewCmdKeysPrune(clitest.Factory(t), func(o *KeysPruneOptions) error { prune = o; return nil }),
		"--all-routes", "--dry-run", "--batch-size", "50", "--tombstone-retention", "30d", "--compact-after", "7d")
	if err != nil || prune == nil || !prune.AllRoutes || !prune.DryRun || prune.Request.BatchSize != 50 || prune.TombstoneRetention != "30d" ||
		prune.CompactAfter != "7d" {
		t.Fatalf("prune: %v, options %+v", err, prune)
	}
	err = clitest.Run(NewCmdKeysResolve(clitest.Factory(t), func(*KeysResolveOptions) error { return nil }), "--key-hash", "h", "--note", "x")
	if err == nil || !strings.Contains(err.Error(), `"as" not set`) {
		t.Fatalf("resolve without --as: %v", err)
	}
}

// keys stats renders a report the same way on every machine: one plain line a route without a
// terminal, then each warning with what to do.
func TestKeysStatsRendersALiteralReport(t *testing.T) {
	ios, _, out, _ := iostreams.Test()
	since := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	printKeysStats(ios, &keys.StatsReport{Since: since,
		Routes:   []keys.RouteStats{{Route: "POST /v1/charges", Requests: 400, Replays: 3, ReplayRate: 0.0075, InProgress: 2, Mismatches: 11, Uncertain: 1, OldestUncertainAgeSeconds: 1200}},
		Warnings: []health.Warning{{Metric: "replayRate", Summary: "POST /v1/charges: 0.75% of the keyed requests since 2026-11-29 were replays (3 of 400), above 0.5%", Action: "clients retry too much"}},
	})
	want := "API idempotency since 2026-11-29 (UTC days)\n\n" +
		"ROUTE\tREQUESTS\tREPLAYS\tREPLAY RATE\t409\t422\tUNCERTAIN NOW\tOLDEST UNCERTAIN\tLAPSED\n" +
		"POST /v1/charges\t400\t3\t0.75%\t2\t11\t1\t20m0s\t0\n\n" +
		"warning: POST /v1/charges: 0.75% of the keyed requests since 2026-11-29 were replays (3 of 400), above 0.5%\n  do: clients retry too much\n"
	if out.String() != want {
		t.Fatalf("got\n%q\nwant\n%q", out.String(), want)
	}
}
