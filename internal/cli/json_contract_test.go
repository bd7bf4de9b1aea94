package cli

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/replayctl/replayctl/internal/cmdutil"
	"github.com/replayctl/replayctl/internal/testenv/exectest"
)

// One world runs every verb an operator runs around a replay with --json: each document names
// its kind, and (through execCommandIO) is validated against that kind's schema under
// docs/schemas.
func TestEveryVerbsJSONIsADocumentOfItsKind(t *testing.T) {
	t.Parallel()
	w := newExecWorld(t)
	job := "job-contract-1"
	uncertainReplay(t, w, job, true)
	for i := 10; i < 24; i++ {
		w.PublishDLQ(exectest.EventID(i), exectest.Order(i))
	}
	stopShadow, err := w.NewConsumer(nil, nil).ServeShadow(w.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stopShadow)
	plan2 := filepath.Join(t.TempDir(), "job2.json")
	export := filepath.Join(t.TempDir(), "export.json")
	for _, c := range []struct {
		args, kind string
		code       int
	}{
		{"migrate", "Migration", cmdutil.ExitOK},
		{"plan --consumer billing --stream DLQ_BILLING --reason 'provider fixed INC-9; rerun the new failures' -o " + plan2, "Plan", cmdutil.ExitOK},
		{"validate " + plan2, "Validation", cmdutil.ExitOK},
		{"show " + job, "Manifest", cmdutil.ExitOK},
		{"show " + job + " -o " + export, "ManifestExport", cmdutil.ExitOK},
		{"status " + job, "Status", cmdutil.ExitOK},
		{"jobs", "JobList", cmdutil.ExitOK},
		{"log " + job, "AuditLog", cmdutil.ExitOK},
		{"shadow " + plan2, "ShadowReport", cmdutil.ExitOK},
		{"pace --rate 100 --reason 'provider asks for 100/s' " + plan2, "Pace", cmdutil.ExitOK},
		{"execute --yes " + plan2, "Execute", cmdutil.ExitOK},
		{"drain --yes " + job, "Drain", cmdutil.ExitOK},
		{"reconcile --consumer billing --dry-run", "Reconcile", cmdutil.ExitNeedsReview},
		{"ledger stats --consumer billing", "LedgerStats", cmdutil.ExitOK},
		{"ledger prune --consumer billing --dry-run", "LedgerPrune", cmdutil.ExitOK},
		{"pause --reason 'provider asks us to stop' " + job, "Error", cmdutil.ExitGateRefused},
	} {
		stdout, stderr, code := w.replayctl(t, c.args+" --json")
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		err := json.Unmarshal([]byte(stdout), &head)
		if code != c.code || err != nil || head.APIVersion != cmdutil.OutputAPIVersion || head.Kind != c.kind {
			t.Errorf("%s --json: exit %d, document %+v (%v); want exit %d and a %s %s document\n%s\n%s",
				c.args, code, head, err, c.code, cmdutil.OutputAPIVersion, c.kind, stdout, stderr)
		}
	}
}
