package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/replayctl/replayctl/internal/cli/validatecmd"
	"github.com/replayctl/replayctl/internal/cmdutil"
	"github.com/replayctl/replayctl/internal/testenv/pgtest"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/manifest"
)

func TestValidateFlags(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args string
		want validatecmd.ValidateOptions
	}{
		{"validate job.json", validatecmd.ValidateOptions{Path: "job.json"}},
		{"validate --ledger job.json", validatecmd.ValidateOptions{Path: "job.json", CheckLedger: true}},
		{"--json validate job.json", validatecmd.ValidateOptions{Path: "job.json", JSON: true}},
		{"validate job.json --json --ledger", validatecmd.ValidateOptions{Path: "job.json", JSON: true, CheckLedger: true}},
	}
	for _, tt := range tests {
		t.Run(tt.args, func(t *testing.T) {
			var got *validatecmd.ValidateOptions
			_, stderr, code := execCommand(t, false, tt.args, func(f *cmdutil.Factory, root *cobra.Command) {
				replaceCommand(root, validatecmd.NewCmdValidate(f, func(o *validatecmd.ValidateOptions) error { got = o; return nil }))
			})
			if code != cmdutil.ExitOK || got == nil {
				t.Fatalf("exit %d, run called: %v, stderr %q", code, got != nil, stderr)
			}
			if got.Path != tt.want.Path || got.CheckLedger != tt.want.CheckLedger || got.JSON != tt.want.JSON {
				t.Errorf("options %+v, want %+v", *got, tt.want)
			}
			if got.IO == nil || got.Ledger == nil {
				t.Error("options lack their dependencies")
			}
		})
	}
}

func TestValidateValidManifest(t *testing.T) {
	t.Parallel()
	m := testManifest(t)
	path := writeManifest(t, m)

	stdout, stderr, code := runCommand(t, false, "validate "+path)
	if code != cmdutil.ExitOK {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	want := path + ": valid (job job-20261202-test01, 12 targets, digest " + m.Digest + ")\n"
	if stdout != want {
		t.Errorf("stdout %q, want %q", stdout, want)
	}

	stdout, _, code = runCommand(t, false, "validate --json "+path)
	var res validatecmd.ValidateResult
	if err := json.Unmarshal([]byte(stdout), &res); err != nil || code != cmdutil.ExitOK {
		t.Fatalf("exit %d, %v:\n%s", code, err, stdout)
	}
	if !res.Valid || res.ID != m.ID || res.Digest != m.Digest || res.Targets != 12 || res.Problems == nil || len(res.Problems) != 0 {
		t.Errorf("JSON result %+v", res)
	}
}

func TestValidateTamperedManifest(t *testing.T) {
	t.Parallel()
	path := writeManifest(t, testManifest(t))
	// Still sorted and valid: only the digest can tell.
	editFile(t, path, `"evt-003"`, `"evt-003a"`)

	stdout, stderr, code := runCommand(t, true, "validate "+path)
	if code != cmdutil.ExitGateRefused {
		t.Errorf("exit %d, want %d", code, cmdutil.ExitGateRefused)
	}
	if !strings.HasPrefix(stderr, "replayctl: "+path+": tampered: the manifest was edited after plan") {
		t.Errorf("stderr %q does not say the manifest was tampered with", stderr)
	}
	if stdout != "" {
		t.Errorf("stdout %q", stdout)
	}

	stdout, _, code = runCommand(t, false, "validate --json "+path)
	var res validatecmd.ValidateResult
	dec := json.NewDecoder(strings.NewReader(stdout))
	if err := dec.Decode(&res); err != nil || dec.More() {
		t.Fatalf("stdout is not one JSON document (%v):\n%s", err, stdout)
	}
	if code != cmdutil.ExitGateRefused || res.Valid || res.ExitCode != cmdutil.ExitGateRefused || !strings.Contains(res.Error, "tampered") || len(res.Problems) != 1 {
		t.Errorf("exit %d, result %+v", code, res)
	}
}

func TestValidateListsEveryProblem(t *testing.T) {
	t.Parallel()
	path := writeManifest(t, testManifest(t))
	// WriteFile refuses an invalid manifest, so break the file as a person or a broken tool would.
	editFile(t, path, `"reason": "payments provider outage INC-4521 fixed; re-run failed charges"`, `"reason": "fix"`)
	editFile(t, path, `"consumer": "billing"`, `"consumer": "billing service"`)
	editFile(t, path, `"targets": 12`, `"targets": 13`)

	_, stderr, code := runCommand(t, false, "validate "+path)
	if code != cmdutil.ExitUsage {
		t.Errorf("exit %d, want %d", code, cmdutil.ExitUsage)
	}
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	if len(lines) != 4 || !strings.Contains(lines[0], "invalid manifest, 3 problem(s)") {
		t.Fatalf("want a headline and one line per problem, got:\n%s", stderr)
	}
	for i, field := range []string{"reason: ", "consumer: ", "stats.targets: "} {
		if !strings.HasPrefix(lines[i+1], "  "+field) {
			t.Errorf("line %d %q, want the problem of %s", i+1, lines[i+1], field)
		}
	}
}

func TestValidateAgainstLedger(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	if _, stderr, code := runCommand(t, false, "migrate --database-url '"+url+"'"); code != cmdutil.ExitOK {
		t.Fatalf("migrate: exit %d, %s", code, stderr)
	}
	m := testManifest(t)
	job := ledger.Job{ID: m.ID, Consumer: m.Consumer, Status: "planned", ManifestDigest: m.Digest,
		EffectVersionFrom: 3, EffectVersionTo: 4, Reason: m.Reason, Stream: m.Source.Stream,
		Targets: m.Stats.Targets, LedgerStateDigest: "sha256:00", CreatedBy: m.CreatedBy, CreatedAt: m.CreatedAt}
	if err := ledger.JobsInsert(context.Background(), pgtest.PoolAt(t, url), job); err != nil {
		t.Fatal(err)
	}
	flags := " --database-url '" + url + "' "

	path := writeManifest(t, m)
	stdout, stderr, code := runCommand(t, false, "validate --ledger"+flags+path)
	if code != cmdutil.ExitOK || !strings.Contains(stdout, "matches the job recorded in the ledger") {
		t.Errorf("recorded manifest: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}

	// Edited and re-sealed: valid on its own, but not the manifest the job was recorded with.
	resealed := testManifest(t)
	resealed.WriteForbidden = true
	if err := manifest.Seal(resealed); err != nil {
		t.Fatal(err)
	}
	path = writeManifest(t, resealed)
	if _, _, code := runCommand(t, false, "validate "+path); code != cmdutil.ExitOK {
		t.Fatalf("without --ledger the re-sealed manifest must pass, exit %d", code)
	}
	_, stderr, code = runCommand(t, false, "validate --ledger"+flags+path)
	if code != cmdutil.ExitGateRefused || !strings.Contains(stderr, "manifest does not match the recorded job") ||
		!strings.Contains(stderr, m.Digest) || !strings.Contains(stderr, "re-run `replayctl plan`") {
		t.Errorf("re-sealed manifest: exit %d, stderr %q", code, stderr)
	}

	unrecorded := testManifest(t)
	unrecorded.ID = "job-never-recorded"
	if err := manifest.Seal(unrecorded); err != nil {
		t.Fatal(err)
	}
	path = writeManifest(t, unrecorded)
	stdout, _, code = runCommand(t, false, "validate --json --ledger"+flags+path)
	var res validatecmd.ValidateResult
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	if code != cmdutil.ExitUsage || res.Valid || res.ExitCode != cmdutil.ExitUsage || res.ID != "job-never-recorded" ||
		len(res.Problems) != 1 || !strings.Contains(res.Problems[0], "no job job-never-recorded") {
		t.Errorf("unrecorded manifest: exit %d, result %+v", code, res)
	}
}

func TestValidateLedgerNeedsMigratedSchema(t *testing.T) {
	t.Parallel()
	path := writeManifest(t, testManifest(t))
	_, stderr, code := runCommand(t, false, "validate --ledger --database-url '"+pgtest.URL(t)+"' "+path)
	if code != cmdutil.ExitFailure || !strings.Contains(stderr, "replayctl migrate") {
		t.Errorf("exit %d, stderr %q; want a runtime failure saying to run migrate", code, stderr)
	}
}
