package shadow_test

import (
	"strings"
	"testing"

	"github.com/replayctl/replayctl/internal/testenv/natstest"
	"github.com/replayctl/replayctl/shadow"
)

// A request NATS will not send (planned before plan knew overMaxPayload, or the server's
// max_payload lowered since) fails its target, not the run: before, shadow exited 1 on every run
// and the job could never be executed (issue 16 item 4).
func TestShadowCountsARequestOverMaxPayloadAsThatTargetsFailure(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for _, id := range []string{"e01", "e02", "e03"} {
		f.dlq(id, "timeout", charge{AmountCents: 1200, Plain: true})
	}
	f.dlq("e-big", "timeout", charge{AmountCents: 1200, Plain: true, SKU: strings.Repeat("s", 5000)})
	m := f.plan() // against a server with the default 1 MiB max_payload: four targets
	if m.Stats.Targets != 4 {
		t.Fatalf("planned %d targets, want 4", m.Stats.Targets)
	}

	// The shadow's requests go through a server with a 4 KiB max_payload; the DLQ is read as planned.
	small := natstest.StartMaxPayload(t, 4096)
	g := *f
	g.env = &natstest.Env{Server: small.Server, Conn: small.Conn, JS: f.env.JS}
	g.serve(behaviour{})

	r, err := g.run(f.options(m, nil))
	if err != nil {
		t.Fatalf("one oversized target stopped the run: %v", err)
	}
	tot := r.Totals
	if tot.Refused != 1 || tot.Answered != 3 || tot.Aborted {
		t.Fatalf("totals %+v, want 1 refused and 3 answered", tot)
	}
	if !hasReason(r.Verdict, "1 of 4 targets (25.00%) failed in shadow (0 shadow errors, 0 missing from the DLQ, 1 refused by NATS as over max_payload)") {
		t.Fatalf("verdict %+v, want the refusal counted against --max-error-ratio", r.Verdict)
	}
	got := f.stored(m.ID)["e-big"]
	if got.ShadowStatus != "refused" || !strings.Contains(got.Error, "max_payload 4096") || !strings.Contains(got.Error, "overMaxPayload") {
		t.Fatalf("e-big stored %+v, want refused with the limit and the fix", got)
	}
	for _, it := range r.Sample.Items {
		if it.EventID == "e-big" && it.Outcome != shadow.OutcomeRefused {
			t.Errorf("sample item %+v, want outcome refused", it)
		}
	}

	// It is one target's failure: a ratio that allows it lets the job go on.
	r, err = g.run(f.options(m, func(o *shadow.Options) { o.Thresholds.MaxErrorRatio = 0.25 }))
	if err != nil || !r.Verdict.Pass {
		t.Fatalf("with --max-error-ratio 0.25: %v, verdict %+v", err, r.Verdict)
	}
}
