package shadow_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/replayctl/replayctl/internal/testenv/exectest"
	"github.com/replayctl/replayctl/shadow"
)

// Issue 14: 50 targets the billing consumer answers with a terminal business failure ("order has
// no currency") under the old version and the new one alike read as identical, the verdict
// passed, and execute then stopped on its error guard. They are failures: the verdict fails.
func TestShadowFailsOnTerminalBusinessFailures(t *testing.T) {
	t.Parallel()
	e := exectest.New(t, exectest.Options{})
	e.Seed(10)
	for i := 10; i < 60; i++ {
		o := exectest.Order(i)
		o.Currency = ""
		e.PublishDLQ(exectest.EventID(i), o)
	}
	m := e.Plan("job-shadow-failures")
	c := e.NewConsumer(nil, nil)
	stop, err := c.ServeShadow(e.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	run := func(mod func(*shadow.Options)) *shadow.Report {
		t.Helper()
		o := shadow.Options{Manifest: m, Thresholds: shadow.DefaultThresholds(), Actor: "alice", Sample: 100, Timeout: 5 * time.Second}
		if mod != nil {
			mod(&o)
		}
		r, err := shadow.Run(e.Ctx, e.NATS.Conn, e.NATS.JS, e.Store, o)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}

	r := run(nil)
	tot := r.Totals
	if tot.Failed != 50 || tot.Identical+tot.Changed+tot.NoOriginal != 10 || tot.ShadowErrors != 0 {
		t.Fatalf("totals %+v: want 50 business failures, a class of their own, beside 10 charged targets", tot)
	}
	// Every target is sampled and has no ledger original: its baseline is a shadow under the old
	// version, which failed alike.
	if tot.FailedAgain != 50 {
		t.Errorf("failed again %d, want 50: the old version fails them too", tot.FailedAgain)
	}
	want := "50 of 60 targets (83.33%) end in a terminal business failure under the new version (50 of them failed before too), above --max-failure-ratio 0; " +
		"execute would count each as failed: see the failed sample items, fix the consumer or plan without them, or allow a ratio"
	if r.Verdict.Pass || !slices.Equal(r.Verdict.Reasons, []string{want}) {
		t.Fatalf("verdict %+v\nwant the one reason %q", r.Verdict, want)
	}
	failedItems := 0
	for _, it := range r.Sample.Items {
		if it.Outcome == shadow.OutcomeFailed {
			failedItems++
			if !it.FailedBefore || !strings.Contains(it.Error, "order has no currency") {
				t.Errorf("sample item %+v: want a failure that failed before too, with its message", it)
			}
		}
	}
	if failedItems != 50 {
		t.Errorf("%d failed sample items, want 50", failedItems)
	}
	if n := e.QueryInt(`select count(*) from job_targets where job_id = $1 and shadow_status = 'ok' and shadow_comparison = 'failed_again'`, m.ID); n != 50 {
		t.Errorf("%d targets stored as failed again, want 50", n)
	}
	if v, err := e.Store.ShadowVerdictsLatest(e.Ctx, m.ID); err != nil || v.Pass {
		t.Fatalf("recorded verdict %+v, %v: want the failing one, which execute refuses", v, err)
	}

	// An operator who means to replay them anyway allows the ratio.
	if r := run(func(o *shadow.Options) { o.Thresholds.MaxFailureRatio = 0.9 }); !r.Verdict.Pass {
		t.Fatalf("verdict %+v with --max-failure-ratio 0.9, want a pass", r.Verdict)
	}
}
