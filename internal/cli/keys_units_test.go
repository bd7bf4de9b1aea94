package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/replayctl/replayctl/apikey"
	"github.com/replayctl/replayctl/health"
	"github.com/replayctl/replayctl/internal/cli/keyscmd"
	"github.com/replayctl/replayctl/internal/cmdutil"
	"github.com/replayctl/replayctl/internal/iostreams"
	"github.com/replayctl/replayctl/keys"
)

// replaceKeysVerb swaps the keys subcommand of the same name for c.
func replaceKeysVerb(root, c *cobra.Command) {
	for _, k := range root.Commands() {
		if k.Name() == "keys" {
			replaceCommand(k, c)
		}
	}
}

// The flags reach the run as typed, and --help and bad flags never open the ledger: the run is
// replaced, and the factory's ledger fails the test if asked for.
func TestKeysFlagsReachTheRunWithoutOpeningTheLedger(t *testing.T) {
	var resolve *keyscmd.KeysResolveOptions
	var prune *keyscmd.KeysPruneOptions
	setup := func(f *cmdutil.Factory, root *cobra.Command) {
		replaceKeysVerb(root, keyscmd.NewCmdKeysResolve(f, func(o *keyscmd.KeysResolveOptions) error { resolve = o; return nil }))
		replaceKeysVerb(root, keyscmd.NewCmdKeysPrune(f, func(o *keyscmd.KeysPruneOptions) error { prune = o; return nil }))
	}
	_, errOut, code := execCommand(t, false, `keys resolve --route "POST /v1/charges" --key-hash hmac-sha256:ab --as not-happened --note "no charge at the provider" --ref ch_1 --yes --actor bob`, setup)
	if code != 0 || resolve == nil {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	r := resolve.Request
	if r.Route != "POST /v1/charges" || r.KeyHash != "hmac-sha256:ab" || r.As != apikey.ResolutionNotHappened || r.ExternalRef != "ch_1" ||
		r.Note != "no charge at the provider" || r.Actor != "bob" || !resolve.Yes {
		t.Fatalf("resolve options %+v", r)
	}
	_, errOut, code = execCommand(t, false, "keys prune --all-routes --dry-run --batch-size 50 --tombstone-retention 30d", setup)
	if code != 0 || prune == nil || !prune.AllRoutes || !prune.DryRun || prune.Request.BatchSize != 50 || prune.TombstoneRetention != "30d" {
		t.Fatalf("prune: exit %d %s, options %+v", code, errOut, prune)
	}
	if _, errOut, code := execCommand(t, false, "keys resolve --key-hash h --note x", setup); code != cmdutil.ExitUsage || !strings.Contains(errOut, `"as" not set`) {
		t.Fatalf("resolve without --as: exit %d %s", code, errOut)
	}
}

// keys stats renders a report the same way on every machine: one plain line a route without a
// terminal, then each warning with what to do.
func TestKeysStatsRendersALiteralReport(t *testing.T) {
	ios, _, out, _ := iostreams.Test()
	since := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	keyscmd.PrintKeysStats(ios, &keys.StatsReport{Since: since,
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
