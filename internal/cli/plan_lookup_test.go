package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/replayctl/replayctl/internal/cli/shared"
	"github.com/replayctl/replayctl/internal/iostreams"
	"github.com/replayctl/replayctl/manifest"
	"github.com/replayctl/replayctl/planner"
)

// Plan's output says how many expired-evidence events it asked the look-up about and what each
// answer did, in the table and in --json (issue 15 item 2).
func TestPlanOutputSaysWhatTheLookupAnswersDid(t *testing.T) {
	t.Parallel()
	m := testManifest(t)
	m.Stats.EvidenceReconciled, m.Stats.EvidenceExpired = 1, 1
	m.EvidenceLookup = &manifest.EvidenceLookup{Asked: 3, Reconciled: 1, Targets: 1, KeptOut: 1, Events: []manifest.LookupOutcome{
		{EventID: "charged", Verdict: "happened", Outcome: manifest.LookupReconciled},
		{EventID: "never-charged", Verdict: "not_happened", Outcome: manifest.LookupTarget},
		{EventID: "provider-unsure", Verdict: "unknown", Outcome: manifest.LookupKeptOut}}}
	if err := manifest.Seal(m); err != nil {
		t.Fatal(err)
	}
	ios, _, out, _ := iostreams.Test()
	if err := shared.PrintPlanResult(ios, false, "job.json", &planner.Result{Manifest: m}); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{"Look-up on expired evidence: 3 asked, 1 recorded reconciled, 1 made targets, 1 still kept out",
		"provider-unsure\tunknown\tkeptOut", "evidenceReconciled"} {
		if !strings.Contains(text, want) {
			t.Errorf("the summary lacks %q:\n%s", want, text)
		}
	}
	ios, _, out, _ = iostreams.Test()
	if err := shared.PrintPlanResult(ios, true, "job.json", &planner.Result{Manifest: m}); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Stats          manifest.Stats          `json:"stats"`
		EvidenceLookup manifest.EvidenceLookup `json:"evidenceLookup"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.EvidenceLookup.Asked != 3 || len(doc.EvidenceLookup.Events) != 3 || doc.Stats.EvidenceReconciled != 1 {
		t.Errorf("--json evidenceLookup %+v, stats.evidenceReconciled %d", doc.EvidenceLookup, doc.Stats.EvidenceReconciled)
	}
}
