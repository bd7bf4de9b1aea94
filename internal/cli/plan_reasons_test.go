package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/replayctl/replayctl/dlq"
	"github.com/replayctl/replayctl/internal/cmdutil"
	"github.com/replayctl/replayctl/manifest"
)

// The SDK dead-letters a reason class with the detail beside it, so a 2,000-event outage is one
// reason; a foreign producer whose reasons carry event data still gets a readable plan: its
// reasons grouped as inspect groups them in the table (issue 39 item 6), the ten largest raw
// reasons and a count of the rest in --json beside the groups (issue 16 item 7).
func TestPlanGroupsReasonsByClassAndShowsTheTopTen(t *testing.T) {
	t.Parallel()
	e := newPlanEnv(t) // three "provider timeout" messages
	env := e.nats
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := range 2000 {
		m := dlq.DeadLetter{Subject: "dlq.billing", EventID: fmt.Sprintf("o-%04d", i), OriginalSubject: "billing.charge.requested",
			Class: "payments provider unavailable", Detail: fmt.Sprintf("charge order o-%04d: payments provider unavailable", i),
			Attempts: 5, FailedAt: time.Now(), Payload: fmt.Appendf(nil, `{"orderId":"o-%04d"}`, i)}.Msg()
		if _, err := env.JS.PublishMsgAsync(m); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 12 {
		m := dlq.DeadLetter{Subject: "dlq.billing", EventID: fmt.Sprintf("f-%02d", i), OriginalSubject: "billing.charge.requested",
			Class: fmt.Sprintf("declined order f-%02d", i), FailedAt: time.Now(), Payload: []byte(`{}`)}.Msg()
		if _, err := env.JS.PublishMsgAsync(m); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-env.JS.PublishAsyncComplete():
	case <-ctx.Done():
		t.Fatal("the DLQ was not stored in time")
	}

	out := filepath.Join(e.dir, "job.json")
	stdout, stderr, code := e.plan(t, false, "--reason '"+planReason+"' -o "+out)
	if code != cmdutil.ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	want := "FAILURE GROUP\tTARGETS\npayments provider unavailable\t2000\ndeclined order f-<n>\t12\nprovider timeout\t3\n\n"
	if !strings.Contains(stdout, want) {
		t.Errorf("stdout lacks the failure groups %q:\n%s", want, stdout)
	}
	m, err := manifest.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Stats.FailureReasons) != 14 || m.Stats.FailureReasons["payments provider unavailable"] != 2000 {
		t.Fatalf("the manifest keeps %d reasons %v, want all 14", len(m.Stats.FailureReasons), m.Stats.FailureReasons)
	}

	// The first job holds its targets until it finishes (issue 14): cancel it to plan them again.
	if _, stderr, code := runCommand(t, false, "cancel "+e.flags+" "+m.ID+" --reason 'plan the same DLQ again for --json'"); code != cmdutil.ExitOK {
		t.Fatalf("cancel: exit %d: %s", code, stderr)
	}
	stdout, stderr, code = e.plan(t, false, "--json --reason '"+planReason+"' -o "+filepath.Join(e.dir, "job2.json"))
	if code != cmdutil.ExitOK {
		t.Fatalf("--json: exit %d: %s", code, stderr)
	}
	var res struct {
		Stats   manifest.Stats    `json:"stats"`
		Summary cmdutil.ReasonTop `json:"failureReasonSummary"`
		Groups  cmdutil.ReasonTop `json:"failureGroupSummary"`
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("stdout is not one JSON document: %v\n%s", err, stdout)
	}
	s := res.Summary
	if len(s.Top) != 10 || s.Top[0] != (cmdutil.ReasonCount{Reason: "payments provider unavailable", Targets: 2000}) || s.OtherReasons != 4 || s.OtherTargets != 4 ||
		len(res.Stats.FailureReasons) != 10 {
		t.Fatalf("--json reasons: summary %+v, stats.failureReasons %v; want the top 10 and 4 others", s, res.Stats.FailureReasons)
	}
	if g := res.Groups; len(g.Top) != 3 || g.Top[1] != (cmdutil.ReasonCount{Reason: "declined order f-<n>", Targets: 12}) || g.OtherReasons != 0 {
		t.Fatalf("--json failure groups %+v, want three", g)
	}
}
