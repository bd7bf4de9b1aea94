package cli

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/nats-io/nats.go"

	"github.com/replayctl/replayctl/internal/cmdutil"
	"github.com/replayctl/replayctl/internal/testenv/exectest"
	"github.com/replayctl/replayctl/planner"
)

// inspect counts the DLQ by failure group (numbers masked), subject, age and attempts, gives the
// ledger's view of the same events, and records nothing; its group is what plan selects by.
func TestInspectGroupsTheDLQAndRecordsNothing(t *testing.T) {
	t.Parallel()
	w := newExecWorld(t)
	w.Seed(6)
	for i, reason := range []string{"card declined after 3012 ms", "card declined after 2998 ms", "card declined after 17 ms"} {
		msg := nats.NewMsg(exectest.DLQSubject)
		msg.Data, _ = json.Marshal(exectest.Order(200 + i))
		msg.Header.Set("Event-Id", exectest.EventID(200+i))
		msg.Header.Set("Dlq-Reason", reason)
		msg.Header.Set("Dlq-Original-Subject", "billing.refund.requested")
		msg.Header.Set("Dlq-Attempts", "3")
		if _, err := w.NATS.JS.PublishMsg(w.Ctx, msg); err != nil {
			t.Fatal(err)
		}
	}
	stdout, stderr, code := w.replayctl(t, "inspect --json --new-consumer --consumer billing --stream DLQ_BILLING")
	var r planner.InspectReport
	if code != cmdutil.ExitOK || json.Unmarshal([]byte(stdout), &r) != nil {
		t.Fatalf("inspect: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if len(r.FailureGroups) != 2 || r.FailureGroups[0].Group != "provider timeout after <n>s" || r.FailureGroups[0].Messages != 6 ||
		r.FailureGroups[1].Group != "card declined after <n> ms" || r.FailureGroups[1].Messages != 3 || r.FailureGroups[1].ExampleEventID != exectest.EventID(200) {
		t.Fatalf("failure groups %+v", r.FailureGroups)
	}
	if r.Usable != 9 || len(r.Subjects) != 2 || r.Subjects[1].Value != "billing.refund.requested" || r.Subjects[1].Messages != 3 ||
		r.Ages[0].Messages != 9 || r.Ledger.WouldBeTargets != 9 {
		t.Fatalf("inspect %+v", r)
	}
	if n := w.QueryInt(`select (select count(*) from jobs) + (select count(*) from audit) + (select count(*) from job_targets)`); n != 0 {
		t.Fatalf("inspect recorded %d rows", n)
	}
	// The group as inspect printed it is what plan selects by.
	res, _ := planJSON(t, w, "--dry-run --failure-group '"+r.FailureGroups[1].Group+"'")
	if res.Stats.Targets != 3 {
		t.Fatalf("plan --failure-group from inspect: %d targets, want 3", res.Stats.Targets)
	}
	stdout, _, code = runCommand(t, false, "inspect --new-consumer --consumer billing --stream DLQ_BILLING "+w.flags)
	if code != cmdutil.ExitOK || !strings.Contains(stdout, "card declined after <n> ms\t3\t"+exectest.EventID(200)) {
		t.Fatalf("inspect table: exit %d\n%s", code, stdout)
	}
	stdout, _, _ = runCommand(t, true, "inspect --new-consumer --consumer billing --stream DLQ_BILLING "+w.flags)
	for _, line := range strings.Split(stdout, "\n") {
		if utf8.RuneCountInString(line) > 80 {
			t.Errorf("a %d-column line on a terminal:\n%s", utf8.RuneCountInString(line), line)
		}
	}
}

// inspect speaks for itself: its refusals are inspect's, it never says it "recorded nothing" as a
// dry run would, a message without an Event-Id is named by its stream sequence (inspect prints
// no manifest to look in), a stream of messages without the DLQ headers is said not to be a DLQ,
// and a raw reason given as a group is answered with its group.
func TestInspectSpeaksForItselfAndAboutAStreamThatIsNoDLQ(t *testing.T) {
	t.Parallel()
	w := newExecWorld(t)
	for i := range 3 {
		msg := nats.NewMsg(exectest.DLQSubject)
		msg.Data = []byte(`{}`)
		msg.Header.Set("Dlq-Reason", fmt.Sprintf("provider timeout after %ds", 30+i))
		if _, err := w.NATS.JS.PublishMsg(w.Ctx, msg); err != nil {
			t.Fatal(err)
		}
	}
	_, stderr, code := w.replayctl(t, "inspect --new-consumer --consumer billing --stream DLQ_BILLING")
	if code != cmdutil.ExitOK || strings.Contains(stderr, "nothing was recorded") || strings.Contains(stderr, "excluded.missingEventIdSeqs") ||
		!strings.Contains(stderr, "stream sequences 1, 2, 3") || !strings.Contains(stderr, "does not look like a DLQ") {
		t.Fatalf("inspect of a stream without DLQ headers: exit %d\n%s", code, stderr)
	}
	_, stderr, code = w.replayctl(t, "inspect --new-consumer --consumer billing --stream DLQ_BILLING --failure-group 'provider timeout after 30s'")
	if code != cmdutil.ExitUsage || !strings.HasPrefix(stderr, "replayctl: inspect refused:") || !strings.Contains(stderr, `its group is "provider timeout after <n>s"`) &&
		!strings.Contains(stderr, `belongs to group "provider timeout after <n>s"`) {
		t.Fatalf("inspect --failure-group with a raw reason: exit %d\n%s", code, stderr)
	}
}
