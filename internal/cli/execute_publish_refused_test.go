package cli

import (
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/replayctl/replayctl/internal/billing"
	"github.com/replayctl/replayctl/internal/cmdutil"
)

// TestExecuteAMessageTheStreamRefusesFailsThatTargetOnly: issue 16 item 4. One replay is larger
// than the billing stream's max_msg_size (set after shadow, as an operator tightening a limit
// would). Before, JetStream's refusal was retried three times and then stopped the whole run
// (exit 1, "run execute again"), on every run, so the job could never finish.
func TestExecuteAMessageTheStreamRefusesFailsThatTargetOnly(t *testing.T) {
	t.Parallel()
	const n = 40
	w := newExecWorld(t)
	w.Seed(n)
	big := billing.Order{OrderID: "ord-big", Customer: "cus_" + strings.Repeat("x", 3000), AmountCents: 1200, Currency: "EUR"}
	w.PublishDLQ("evt-big", big)
	m := w.Plan("job-cli-refused")
	w.Shadow(m)
	w.updateBillingStream(t, func(cfg *jetstream.StreamConfig) { cfg.MaxMsgSize = 2048 })
	w.RunConsumer(w.NewConsumer(nil, nil))

	stdout, stderr, code := w.replayctl(t, "execute --yes "+w.ManifestPath())
	if code != cmdutil.ExitOK {
		t.Fatalf("exit %d, want 0 with the refused target failed:\n%s\n%s", code, stdout, stderr)
	}
	if s := w.JobStatus(m.ID); s != "completed" {
		t.Errorf("job %s, want completed", s)
	}
	if got := w.QueryInt(`select count(*) from job_targets where job_id = $1 and event_id = 'evt-big' and status = 'failed'
		and outcome_detail like 'not published: the replay message (% bytes: payload %) exceeds the stream''s max_msg_size%'`, m.ID); got != 1 {
		t.Errorf("evt-big is not failed with the stream's refusal as its reason")
	}
	if got := w.Provider.Charges(big.OrderID); got != 0 {
		t.Errorf("the refused order was charged %d times", got)
	}
	w.assertChargedOnce(t, n)
	if want := lacking(stdout, "completed\t40", "failed\t1", "not published: 1 targets never reached the consumer", "evt-big\t"); want != "" {
		t.Errorf("stdout lacks %q:\n%s", want, stdout)
	}
	// status names the target and the real reason, not "DLQ message gone or changed".
	r := w.statusJSON(t, m.ID)
	if len(r.NotPublished) != 1 || r.NotPublished[0].EventID != "evt-big" || !strings.Contains(r.NotPublished[0].Detail, "max_msg_size") {
		t.Errorf("status --json notPublishedTargets %+v: want evt-big with the stream's refusal", r.NotPublished)
	}
}
