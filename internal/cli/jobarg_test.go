package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/replayctl/replayctl/internal/cmdutil"
	"github.com/replayctl/replayctl/internal/testenv/exectest"
	"github.com/replayctl/replayctl/manifest"
)

// planByCLI plans the world's DLQ with the plan verb into dir/name and returns the manifest.
func (w *execWorld) planByCLI(t *testing.T, path string) *manifest.Manifest {
	t.Helper()
	stdout, stderr, code := w.replayctl(t, "plan --consumer billing --stream "+exectest.DLQStream+" --reason '"+planReason+"' -o "+path)
	if code != cmdutil.ExitOK {
		t.Fatalf("plan: exit %d:\n%s\n%s", code, stdout, stderr)
	}
	m, err := manifest.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestEveryJobVerbTakesAJobIDLikeItsManifestFile(t *testing.T) {
	t.Parallel()
	w := newExecWorld(t)
	w.Seed(6)
	dir := t.TempDir()
	planned := filepath.Join(dir, "billing-inc4521.json")
	m := w.planByCLI(t, planned)
	plannedBytes, err := os.ReadFile(planned)
	if err != nil {
		t.Fatal(err)
	}

	byFile, _, code := w.replayctl(t, "show "+planned)
	byID, stderr, codeID := w.replayctl(t, "show "+m.ID)
	if code != cmdutil.ExitOK || codeID != cmdutil.ExitOK || byID != byFile {
		t.Fatalf("show JOB (exit %d) differs from show FILE (exit %d):\n%s\n---\n%s\n%s", codeID, code, byID, byFile, stderr)
	}

	// The stored manifest exports byte for byte as the file plan wrote; an existing file is kept
	// unless --force.
	exported := filepath.Join(dir, "job.json")
	stdout, stderr, code := w.replayctl(t, "show "+m.ID+" -o "+exported)
	if code != cmdutil.ExitOK || !strings.Contains(stdout, "wrote the manifest of job "+m.ID+" to "+exported) {
		t.Fatalf("show JOB -o: exit %d:\n%s\n%s", code, stdout, stderr)
	}
	if got, _ := os.ReadFile(exported); !bytes.Equal(got, plannedBytes) {
		t.Fatalf("the exported manifest (%d bytes) is not the planned file (%d bytes)", len(got), len(plannedBytes))
	}
	if _, stderr, code := w.replayctl(t, "show "+m.ID+" -o "+exported); code != cmdutil.ExitUsage || !strings.Contains(stderr, "pass --force to replace it") {
		t.Errorf("show -o over an existing file: exit %d, stderr %q; want 2", code, stderr)
	}
	if _, stderr, code := w.replayctl(t, "show --force "+m.ID+" -o "+exported); code != cmdutil.ExitOK {
		t.Errorf("show --force -o: exit %d: %s", code, stderr)
	}

	// shadow, execute and status by job ID alone; the report goes where --report says.
	stopShadow, err := w.NewConsumer(nil, nil).ServeShadow(w.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	report := filepath.Join(dir, "report.json")
	if stdout, stderr, code := w.replayctl(t, "shadow --sample 3 --report "+report+" "+m.ID); code != cmdutil.ExitOK {
		t.Fatalf("shadow JOB: exit %d:\n%s\n%s", code, stdout, stderr)
	}
	stopShadow()
	if _, err := os.Stat(report); err != nil {
		t.Errorf("shadow JOB wrote no report at --report: %v", err)
	}
	if _, stderr, code := w.replayctl(t, "pause "+planned); code != cmdutil.ExitGateRefused || !strings.Contains(stderr, "only an executing job can be paused") {
		t.Errorf("pause FILE of a shadowed job: exit %d, stderr %q; want the control's own refusal (3)", code, stderr)
	}
	w.RunConsumer(w.NewConsumer(nil, nil))
	if stdout, stderr, code := w.replayctl(t, "execute --yes "+m.ID); code != cmdutil.ExitOK || !strings.Contains(stdout, "execute of job "+m.ID+": completed") {
		t.Fatalf("execute JOB: exit %d:\n%s\n%s", code, stdout, stderr)
	}
	w.assertChargedOnce(t, 6)
	if r := w.statusJSON(t, planned); r.JobID != m.ID || r.Status != "completed" {
		t.Errorf("status FILE: job %s %s", r.JobID, r.Status)
	}
}

func TestAManifestThatIsNotTheRecordedOneIsStillRefused(t *testing.T) {
	t.Parallel()
	w := newExecWorld(t)
	w.Seed(3)
	dir := t.TempDir()
	planned := filepath.Join(dir, "job.json")
	m := w.planByCLI(t, planned)

	edited := filepath.Join(dir, "edited.json")
	writeEdited(t, planned, edited, planReason, planReason+" and more")
	stale := resealed(t, dir, "resealed.json", m, func(c *manifest.Manifest) { c.Reason = planReason + " and more" })
	for _, verb := range []string{"status", "pause", "resume", "cancel", "show"} {
		if _, stderr, code := w.replayctl(t, verb+" "+edited); code != cmdutil.ExitGateRefused || !strings.Contains(stderr, "tampered") {
			t.Errorf("%s of an edited manifest: exit %d, stderr %q; want 3 (tampered)", verb, code, stderr)
		}
	}
	for _, verb := range []string{"status", "pause", "resume", "cancel"} {
		if _, stderr, code := w.replayctl(t, verb+" "+stale); code != cmdutil.ExitGateRefused || !strings.Contains(stderr, "was recorded with digest") {
			t.Errorf("%s of a resealed manifest: exit %d, stderr %q; want 3 (not the recorded digest)", verb, code, stderr)
		}
	}
	if s := w.JobStatus(m.ID); s != "planned" {
		t.Fatalf("a refused manifest moved the job to %s", s)
	}

	// The stored copy is checked as strictly: changed bytes in the ledger are refused (exit 3).
	if _, err := w.DB.Exec(w.Ctx, `update job_manifests set body = body || '\x20'::bytea where job_id = $1`, m.ID); err != nil {
		t.Fatal(err)
	}
	for _, verb := range []string{"show", "execute --yes", "shadow"} {
		if _, stderr, code := w.replayctl(t, verb+" "+m.ID); code != cmdutil.ExitGateRefused || !strings.Contains(stderr, "changed in the ledger after plan") {
			t.Errorf("%s JOB with its stored manifest changed: exit %d, stderr %q; want 3", verb, code, stderr)
		}
	}
	// A job planned before manifests were stored: its file still works, its ID says to use it.
	if _, err := w.DB.Exec(w.Ctx, `delete from job_manifests where job_id = $1`, m.ID); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := w.replayctl(t, "show "+m.ID); code != cmdutil.ExitUsage || !strings.Contains(stderr, "give the manifest file plan wrote") {
		t.Errorf("show JOB without a stored manifest: exit %d, stderr %q; want 2", code, stderr)
	}
	if _, stderr, code := w.replayctl(t, "show "+planned); code != cmdutil.ExitOK {
		t.Errorf("show FILE of that job: exit %d: %s", code, stderr)
	}
	if _, stderr, code := w.replayctl(t, "show no-such-file.json"); code != cmdutil.ExitUsage || !strings.Contains(stderr, "no-such-file.json") {
		t.Errorf("show of a missing file: exit %d, stderr %q; want 2 naming it", code, stderr)
	}
}
