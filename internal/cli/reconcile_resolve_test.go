package cli

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/replayctl/replayctl/internal/cli/reconcilecmd"
	"github.com/replayctl/replayctl/internal/cmdutil"
	"github.com/replayctl/replayctl/internal/testenv/exectest"
	"github.com/replayctl/replayctl/reconcile"
)

func TestReconcileResolveFlagsAreCheckedBeforeResolving(t *testing.T) {
	t.Parallel()
	var got *reconcilecmd.ReconcileResolveOptions
	_, stderr, code := execCommand(t, false, "reconcile resolve --consumer billing evt-1 --as not-happened --note 'no charge at the provider' --effect-version 3 --yes",
		func(f *cmdutil.Factory, root *cobra.Command) {
			for _, c := range root.Commands() {
				if c.Name() == "reconcile" {
					replaceCommand(c, reconcilecmd.NewCmdReconcileResolve(f, func(o *reconcilecmd.ReconcileResolveOptions) error { got = o; return nil }))
				}
			}
		})
	if code != cmdutil.ExitOK || got == nil {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if r := got.Request; r.Consumer != "billing" || r.EventID != "evt-1" || r.As != "not_happened" || r.EffectVersion != 3 || !got.Yes {
		t.Fatalf("options %+v", r)
	}
	// An unreachable database proves the refusals come first.
	for args, want := range map[string]string{
		"reconcile resolve --consumer billing evt-1 --note 'checked the provider dashboard'":                  "--as is required",
		"reconcile resolve --consumer billing evt-1 --as unknown --note 'checked the provider dashboard'":     `--as "unknown": want happened or not-happened`,
		"reconcile resolve --consumer billing evt-1 --as happened --note ok":                                  `--note "ok": say what you checked`,
		"reconcile resolve --consumer billing --as happened --note 'checked the provider dashboard'":          "resolve takes the event ID whose uncertain row to resolve, one",
		"reconcile resolve --consumer billing evt-1 --as happened --note 'checked' --effect-version -1":       "--effect-version -1",
		"reconcile resolve --consumer 'bad name' evt-1 --as happened --note 'checked the provider dashboard'": "--consumer",
	} {
		_, stderr, code := runCommand(t, false, args+" --database-url postgres://127.0.0.1:1/x")
		if code != cmdutil.ExitUsage || !strings.Contains(stderr, want) {
			t.Errorf("%s: exit %d, stderr %q; want 2 with %q", args, code, stderr, want)
		}
	}
}

// A person closes the two uncertain rows of a replay: one as happened (reconciled, its target
// completed), one as not happened (released, its target failed) with an audit entry each. The
// released event is replayed by nobody until the next plan, which targets it; an uncertain row
// nobody resolved stays out of that plan.
func TestReconcileResolveClosesRowsAndANotHappenedEventIsTheNextPlansTarget(t *testing.T) {
	t.Parallel()
	w := newExecWorld(t)
	const job = "job-cli-resolve"
	uncertainReplay(t, w, job, false)
	charged, uncharged := exectest.EventID(3), exectest.EventID(6)
	note := "'payments dashboard: no charge for this order (INC-4521)'"

	stdout, stderr, code := w.replayctl(t, "reconcile resolve --consumer billing "+uncharged+" --as not-happened --note "+note)
	if code != cmdutil.ExitGateRefused || !strings.Contains(stderr, "pass --yes") {
		t.Fatalf("without a terminal or --yes: exit %d, want 3:\n%s\n%s", code, stdout, stderr)
	}
	if n := w.QueryInt(`select count(*) from effects where state = 'uncertain'`); n != 2 {
		t.Fatalf("%d uncertain rows after a refused resolve, want 2", n)
	}
	stdout, stderr, code = w.replayctl(t, "reconcile resolve --consumer billing evt-00001 --as happened --yes --note "+note)
	if code != cmdutil.ExitUsage || !strings.Contains(stderr, `event "evt-00001" of consumer billing has no uncertain row (its rows: version 2 completed)`) {
		t.Errorf("a completed event: exit %d, want 2 naming its rows:\n%s\n%s", code, stdout, stderr)
	}

	stdout, stderr, code = w.replayctl(t, "reconcile resolve --consumer billing "+uncharged+" --as not-happened --yes --note "+note)
	if code != cmdutil.ExitOK {
		t.Fatalf("resolve not-happened: exit %d:\n%s\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"resolved event " + uncharged + " version 2 of consumer billing as not_happened",
		"received: the next plan targets it", "job target   failed of job " + job, "nothing was replayed"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	if n := w.QueryInt(`select count(*) from effects where event_id = $1 and state = 'received' and calls_started = 0
		and review_verdict = 'not_happened' and reviewed_by = 'alice' and review_state is null`, uncharged); n != 1 {
		t.Error("the not-happened row is not released with the decision on it")
	}

	// Never a silent replay: nothing is published and nobody charges the released order.
	messages := w.StreamMessages()
	time.Sleep(300 * time.Millisecond)
	if w.StreamMessages() != messages || w.Provider.Charges(exectest.Order(6).OrderID) != 0 {
		t.Fatalf("the released event was replayed: %d messages (was %d), %d charges of its order",
			w.StreamMessages(), messages, w.Provider.Charges(exectest.Order(6).OrderID))
	}

	// The next plan targets the released event; the row nobody resolved yet stays out of it.
	m := w.Plan("job-cli-resolve-next")
	if !slices.Contains(m.EventIDs, uncharged) || slices.Contains(m.EventIDs, charged) || m.Stats.ExcludedUncertain != 1 {
		t.Fatalf("next plan: targets %v, excluded uncertain %d; want %s among the targets and %s excluded",
			m.EventIDs, m.Stats.ExcludedUncertain, uncharged, charged)
	}

	stdout, stderr, code = w.replayctl(t, "reconcile resolve --consumer billing "+charged+" --as happened --yes --json --note "+note)
	var res reconcile.Resolution
	if err := json.Unmarshal([]byte(stdout), &res); err != nil || code != cmdutil.ExitOK {
		t.Fatalf("resolve happened --json: exit %d, %v:\n%s\n%s", code, err, stdout, stderr)
	}
	if !res.Applied || res.From != "uncertain" || res.To != "reconciled" || res.JobID != job || !res.TargetUpdated {
		t.Errorf("resolution %+v", res)
	}

	if n := w.QueryInt(`select count(*) from effects where event_id = $1 and state = 'reconciled' and review_verdict = 'happened'`, charged); n != 1 {
		t.Error("the happened row is not reconciled")
	}
	if n := w.QueryInt(`select count(*) from audit where action = 'reconcile.resolved' and actor = 'alice' and job_id = $1
		and details->>'detail' like 'payments dashboard%' and details->>'eventId' in ($2, $3)`, job, charged, uncharged); n != 2 {
		t.Errorf("%d resolve audit entries with the note, want 2", n)
	}
	if got := w.statusJSON(t, job).Counts; got.Completed != 9 || got.Failed != 1 || got.Uncertain != 0 {
		t.Errorf("job counts after resolving %+v, want 9 completed and 1 failed", got)
	}
}
