package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/replayctl/replayctl/consumer"
	"github.com/replayctl/replayctl/fingerprint"
	"github.com/replayctl/replayctl/internal/billing"
	"github.com/replayctl/replayctl/internal/cli/reconcilecmd"
	"github.com/replayctl/replayctl/internal/cmdutil"
	"github.com/replayctl/replayctl/internal/testenv/exectest"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/reconcile"
)

func TestReconcileFlagsAreCheckedBeforeConnecting(t *testing.T) {
	t.Parallel()
	for _, args := range []string{
		"reconcile",
		"reconcile --consumer billing --concurrency 0",
		"reconcile --consumer billing --timeout 0s",
		"reconcile --consumer 'bad name'",
		"reconcile --consumer billing extra",
	} {
		// An unreachable database and NATS server prove the refusal comes first.
		stdout, stderr, code := runCommand(t, false, args+" --database-url postgres://127.0.0.1:1/x --nats-url nats://127.0.0.1:1")
		if code != cmdutil.ExitUsage {
			t.Errorf("%s: exit %d, want 2:\n%s\n%s", args, code, stdout, stderr)
		}
	}
	var got *reconcilecmd.ReconcileOptions
	_, _, code := execCommand(t, false, "reconcile --consumer billing --job j-1 --older-than 1h --dry-run --timeout 2s --concurrency 8 --max 50",
		func(f *cmdutil.Factory, root *cobra.Command) {
			replaceCommand(root, reconcilecmd.NewCmdReconcile(f, func(o *reconcilecmd.ReconcileOptions) error { got = o; return nil }))
		})
	r := got.Request
	if code != cmdutil.ExitOK || r.Consumer != "billing" || r.JobID != "j-1" || r.OlderThan != time.Hour || !r.DryRun ||
		r.Timeout != 2*time.Second || r.Concurrency != 8 || r.Max != 50 {
		t.Fatalf("exit %d, options %+v", code, got.Request)
	}
}

// uncertainReplay executes a 10-target job whose replay of event 3 charged but lost the
// provider's reply and whose replay of event 6 timed out before charging: two uncertain targets.
func uncertainReplay(t *testing.T, w *execWorld, jobID string, withLookup bool) {
	t.Helper()
	w.Shadowed(10, jobID)
	orders := billing.NewOrders()
	ordinary := billing.Handler(w.Provider, time.Now)
	handler := orders.Record(func(ctx context.Context, ev consumer.Event, fx *consumer.Effects) (consumer.Result, error) {
		charged, uncharged := ev.ID == exectest.EventID(3), ev.ID == exectest.EventID(6)
		if ev.Mode != consumer.ModeReplay || (!charged && !uncharged) {
			return ordinary(ctx, ev, fx)
		}
		_, err := fx.Call(ctx, billing.EffectCharge, billing.TargetCharge, func(ctx context.Context) (string, error) {
			if charged {
				o := exectest.Order(3)
				if _, err := w.Provider.Charge(ctx, o.OrderID, o.AmountCents, o.Currency); err != nil {
					return "", err
				}
			}
			return "", fmt.Errorf("connection reset: %w", consumer.ErrOutcomeUnknown)
		})
		return consumer.Result{}, err
	})
	w.RunConsumer(w.NewConsumer(handler, func(cfg *consumer.Config) {
		if withLookup {
			cfg.Lookup = billing.Lookup(w.Provider, orders)
		}
	}))
	if _, _, code := w.replayctl(t, "execute --yes "+w.ManifestPath()); code != cmdutil.ExitNeedsReview {
		t.Fatalf("execute: exit %d, want 5 with two uncertain targets", code)
	}
}

func TestReconcileSettlesAJobsUncertainTargets(t *testing.T) {
	t.Parallel()
	w := newExecWorld(t)
	const job = "job-cli-reconcile"
	uncertainReplay(t, w, job, true)
	audits := w.QueryInt(`select count(*) from audit`)

	// Without a terminal and without --yes nothing is applied.
	stdout, stderr, code := w.replayctl(t, "reconcile --consumer billing --job "+job)
	if code != cmdutil.ExitGateRefused || !strings.Contains(stderr, "pass --yes") || !strings.Contains(stdout, "NOT APPLIED: nothing was changed") {
		t.Fatalf("unconfirmed: exit %d, want 3:\n%s\n%s", code, stdout, stderr)
	}
	stdout, stderr, code = w.replayctl(t, "reconcile --consumer billing --dry-run")
	if code != cmdutil.ExitNeedsReview || !strings.HasPrefix(stdout, "DRY RUN: nothing was changed.") {
		t.Fatalf("dry run: exit %d, want 5 (a row would remain):\n%s\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"EVENT\tVERSION\tJOB\tAGE\tCALLS\tREFS\tLAST ERROR\tVERDICT\tOUTCOME\tDETAIL",
		exectest.EventID(3) + "\t2\t" + job, "happened\twould_reconcile", "not_happened\twould_review"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("dry run stdout lacks %q:\n%s", want, stdout)
		}
	}
	if n := w.QueryInt(`select count(*) from audit`); n != audits {
		t.Fatalf("the refused and dry runs wrote %d audit entries", n-audits)
	}
	if r := w.statusJSON(t, job); r.Counts.Uncertain != 2 || r.Counts.Completed != 8 {
		t.Fatalf("counts after refused and dry runs: %+v", r.Counts)
	}

	stdout, stderr, code = w.replayctl(t, "reconcile --consumer billing --job "+job+" --yes --json")
	if code != cmdutil.ExitNeedsReview {
		t.Fatalf("reconcile --yes: exit %d, want 5:\n%s\n%s", code, stdout, stderr)
	}
	var rep reconcile.Report
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("stdout is not one JSON document: %v\n%s", err, stdout)
	}
	if rep.Totals.Reconciled != 1 || rep.Totals.ManualReview != 1 || rep.Totals.Remaining != 1 || !rep.Applied {
		t.Fatalf("totals %+v", rep.Totals)
	}
	if !strings.Contains(stderr, "1 uncertain rows of consumer billing remain for manual review") {
		t.Errorf("stderr %q", stderr)
	}
	// The reconciled target counts as completed; the other stays uncertain, saying why.
	r := w.statusJSON(t, job)
	if r.Counts.Completed != 9 || r.Counts.Uncertain != 1 || len(r.Uncertain) != 1 || r.Uncertain[0].EventID != exectest.EventID(6) {
		t.Fatalf("status after reconcile: counts %+v, uncertain %+v", r.Counts, r.Uncertain)
	}
	if n := w.QueryInt(`select count(*) from job_targets where job_id = $1 and event_id = $2 and outcome_detail like 'manual review (look-up: not_happened)%'`,
		job, exectest.EventID(6)); n != 1 {
		t.Error("the manual-review target does not say why it is still uncertain")
	}
	if dups := w.DuplicateCharges(); len(dups) > 0 {
		t.Errorf("duplicates: %v", dups)
	}
}

func TestReconcileWithoutAResponderExits1AndChangesNothing(t *testing.T) {
	t.Parallel()
	w := newExecWorld(t)
	if _, err := w.Store.EffectsImport(w.Ctx, []ledger.EffectRow{{Consumer: "billing", EventID: "evt-u", EffectVersion: 1,
		State: "uncertain", RequestHash: fingerprint.Payload([]byte(`{}`)), RequestHashAlg: fingerprint.Algorithm}}); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := w.replayctl(t, "reconcile --consumer billing --yes")
	if code != cmdutil.ExitFailure || !strings.Contains(stderr, "no look-up responder for consumer billing") || !strings.Contains(stderr, "nothing was changed") {
		t.Fatalf("exit %d, want 1 naming the missing responder:\n%s\n%s", code, stdout, stderr)
	}
	if n := w.QueryInt(`select count(*) from effects where state = 'uncertain' and reviewed_at is null`); n != 1 {
		t.Fatal("the uncertain row changed without a responder")
	}

	stdout, _, code = w.replayctl(t, "reconcile --consumer mailer --yes")
	if code != cmdutil.ExitOK || !strings.Contains(stdout, "no uncertain ledger rows for consumer mailer") {
		t.Fatalf("a consumer without uncertain rows: exit %d, want 0:\n%s", code, stdout)
	}
}

// A replayed order whose consumer was killed after its charge, and whose message is gone, leaves
// its row processing with nobody to come back to it: ledger stats warns of the stuck lease, and
// reconcile settles it through the look-up, so the job's count is whole again.
func TestReconcileSettlesAStuckLeaseThatLedgerStatsWarnsOf(t *testing.T) {
	t.Parallel()
	w := newExecWorld(t)
	const job = "job-cli-stuck"
	w.Shadowed(10, job)
	orders := billing.NewOrders()
	w.RunConsumer(w.NewConsumer(orders.Record(billing.Handler(w.Provider, time.Now)), func(cfg *consumer.Config) {
		cfg.Lookup = billing.Lookup(w.Provider, orders)
	}))
	if _, stderr, code := w.replayctl(t, "execute --yes "+w.ManifestPath()); code != cmdutil.ExitOK {
		t.Fatalf("execute: exit %d: %s", code, stderr)
	}
	stuckEvent := exectest.EventID(3)
	w.QueryInt(`with e as (update effects set state = 'processing', calls_started = 1, lease_owner = 'killed-instance',
			lease_expires_at = now() - interval '20 minutes', result_hash = null, result_body = null
		where job_id = $1 and event_id = $2 returning 1),
		t as (update job_targets set status = 'published' where job_id = $1 and event_id = $2 returning 1)
		select (select count(*) from e) + (select count(*) from t)`, job, stuckEvent)

	stdout, _, code := w.replayctl(t, "ledger stats --consumer billing")
	if code != cmdutil.ExitOK || !strings.Contains(stdout, "replayctl reconcile --consumer billing") {
		t.Fatalf("ledger stats: exit %d, want the stuck lease warned of with reconcile as what to do:\n%s", code, stdout)
	}
	stdout, stderr, code := w.replayctl(t, "reconcile --consumer billing --dry-run")
	if code != cmdutil.ExitOK || !strings.Contains(stdout, stuckEvent) || !strings.Contains(stdout, "stuck lease: lapsed after a call started") ||
		!strings.Contains(stdout, "happened\twould_reconcile") {
		t.Fatalf("dry run: exit %d, want the stuck lease listed as would_reconcile:\n%s\n%s", code, stdout, stderr)
	}
	if _, stderr, code := w.replayctl(t, "reconcile --consumer billing --yes"); code != cmdutil.ExitOK {
		t.Fatalf("reconcile --yes: exit %d: %s", code, stderr)
	}
	if r := w.statusJSON(t, job); r.Counts.Completed != 10 {
		t.Fatalf("counts after reconcile: %+v, want all 10 completed", r.Counts)
	}
	if stdout, _, _ := w.replayctl(t, "ledger stats --consumer billing"); strings.Contains(stdout, "replayctl reconcile --consumer billing") {
		t.Errorf("ledger stats still warns of a stuck lease after reconcile:\n%s", stdout)
	}
	if charges := w.Provider.Charges(exectest.Order(3).OrderID); charges != 1 {
		t.Errorf("order 3 charged %d times, want once", charges)
	}
}
