package cli

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/replayctl/replayctl/internal/cli/shared"
	"github.com/replayctl/replayctl/internal/cli/showcmd"
	"github.com/replayctl/replayctl/internal/cmdutil"
	"github.com/replayctl/replayctl/manifest"
)

func TestShowFlags(t *testing.T) {
	t.Parallel()
	var got *showcmd.ShowOptions
	_, stderr, code := execCommand(t, false, "show job.json --json", func(f *cmdutil.Factory, root *cobra.Command) {
		replaceCommand(root, showcmd.NewCmdShow(f, func(o *showcmd.ShowOptions) error { got = o; return nil }))
	})
	if code != cmdutil.ExitOK || got == nil {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	if got.Path != "job.json" || !got.JSON || got.IO == nil {
		t.Errorf("options %+v", *got)
	}
}

func TestShowPlain(t *testing.T) {
	t.Parallel()
	path := writeManifest(t, testManifest(t))
	stdout, stderr, code := runCommand(t, false, "show "+path)
	if code != cmdutil.ExitOK {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	// Non-TTY rows are exact, tab-separated lines.
	for _, line := range []string{
		"job\tjob-20261202-test01",
		"consumer\tbilling",
		"reason\tpayments provider outage INC-4521 fixed; re-run failed charges",
		"ticket\tINC-4521",
		"created by\talice",
		"created at\t2026-12-02T09:30:00Z",
		"stream\tDLQ_BILLING",
		"subject filter\tdlq.billing.>",
		"time range\t2026-12-01T00:00:00Z to plan time",
		"failure match\ttimeout|503",
		"seq range\t101 to 1334 (stream last seq 1400 at plan)",
		"effect version\t3 -> 4",
		"write forbidden\tfalse",
		"expected external calls\t29",
		"estimate method\trecorded effect_count",
		"estimate\t8 known targets with 21 recorded calls + 4 estimated targets at 2 calls each (mean of 77 effects)",
		"scanned\t1234",
		"missingEventId\t7",
		"invalidEventId\t6",
		"notMatchingFailureFilter\t41",
		"candidates\t987",
		"repeatedInSource\t55",
		"duplicateInSource\t2",
		"ledgerPayloadMismatch\t1",
		"alreadyCompleted\t911",
		"completedUnderOlderVersion\t5",
		"alreadyCompletedRatio\t0.9281 (92.8%)",
		"excludedUncertain\t25",
		"excludedInFlight\t1",
		"overMax\t30",
		"targets\t12",
		"FAILURE GROUP\tTARGETS\ntimeout\t7\nprovider <n>\t4\nbad gateway\t1\n",
		"evt-u-19\t3\tuncertain\t-\t-\n... 5 more\n",
		"evt-f-00\t3\tprocessing\tbilling-7f9c\t2026-12-02T09:45:00Z",
		"evt-c-00\tsource\tsha256:aa, sha256:bb",
		"STREAM SEQ\n117\n240\n",
		"EVENT ID\nevt-000\n",
		"evt-009\n... 2 more\n",
	} {
		if !strings.Contains(stdout, line) {
			t.Errorf("output lacks %q", line)
		}
	}
	if strings.Contains(stdout, "evt-u-20") || strings.Contains(stdout, "evt-010") {
		t.Error("show printed more rows than its limits")
	}
	if strings.ContainsAny(stdout, "│─┌") {
		t.Error("non-TTY output has box drawing")
	}
	if t.Failed() {
		t.Logf("output:\n%s", stdout)
	}
}

func TestShowTTY(t *testing.T) {
	t.Parallel()
	path := writeManifest(t, testManifest(t))
	stdout, stderr, code := runCommand(t, true, "show "+path)
	if code != cmdutil.ExitOK {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	if !strings.Contains(stdout, "│") {
		t.Errorf("TTY output is not boxed:\n%s", stdout)
	}
	for _, want := range []string{"1234", "987", "911", "0.9281", "INC-4521", "3 -> 4", "timeout", "... 5 more", "... 2 more"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("TTY output lacks %q", want)
		}
	}
	// The histogram is sorted by count, largest first.
	if i, j, k := strings.Index(stdout, "timeout "), strings.Index(stdout, "provider <n>"), strings.Index(stdout, "bad gateway"); !(i < j && j < k) {
		t.Errorf("failure reasons out of order (%d, %d, %d):\n%s", i, j, k, stdout)
	}
}

func TestShowJSONRoundTrips(t *testing.T) {
	t.Parallel()
	m := testManifest(t)
	path := writeManifest(t, m)
	stdout, stderr, code := runCommand(t, false, "show --json "+path)
	if code != cmdutil.ExitOK {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	file, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if stdout != string(file) {
		t.Errorf("show --json differs from the file:\n%s", stdout)
	}
	back, err := manifest.Decode(strings.NewReader(stdout))
	if err != nil {
		t.Fatalf("show --json does not decode as a manifest: %v", err)
	}
	if back.Digest != m.Digest {
		t.Errorf("digest %s, want %s", back.Digest, m.Digest)
	}
}

func TestShowRefusesTamperedManifest(t *testing.T) {
	t.Parallel()
	path := writeManifest(t, testManifest(t))
	editFile(t, path, `"scanned": 1234`, `"scanned": 1235`)
	stdout, stderr, code := runCommand(t, false, "show "+path)
	if code != cmdutil.ExitGateRefused || !strings.Contains(stderr, "tampered") || stdout != "" {
		t.Errorf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

func TestShowSanitisesControlCharacters(t *testing.T) {
	t.Parallel()
	m := testManifest(t)
	m.Stats.FailureReasons = map[string]int64{"timeout\x1b[31m\tred\nline": 12}
	if err := manifest.Seal(m); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := shared.PrintSummary(&out, false, m); err != nil {
		t.Fatal(err)
	}
	// Shown escaped, so a reviewer sees that the reason holds an escape sequence and a line break.
	if strings.Contains(out.String(), "\x1b") || !strings.Contains(out.String(), `timeout\x1b[<n>m\tred\nline`+"\t12\n") {
		t.Errorf("control characters reached the output:\n%q", out.String())
	}
}

// The help is what an operator scripts against: each exit code it names must be the one show
// returns.
func TestShowHelpStatesTheExitCodesShowReturns(t *testing.T) {
	t.Parallel()
	help, _, _ := runCommand(t, false, "show --help")
	edited := writeManifest(t, testManifest(t))
	editFile(t, edited, `"scanned": 1234`, `"scanned": 1235`)
	invalid := writeManifest(t, testManifest(t))
	editFile(t, invalid, `"apiVersion": "replayctl/v1"`, `"apiVersion": 7`)
	for _, tt := range []struct {
		path, claim string
		want        int
	}{
		{edited, "edited after plan (its digest does not\nmatch) is refused with exit 3", cmdutil.ExitGateRefused},
		{invalid, "an invalid one with exit 2", cmdutil.ExitUsage},
	} {
		if !strings.Contains(help, tt.claim) {
			t.Errorf("show --help does not say %q:\n%s", tt.claim, help)
		}
		if _, stderr, code := runCommand(t, false, "show "+tt.path); code != tt.want {
			t.Errorf("show of a manifest the help says exits %d: exit %d:\n%s", tt.want, code, stderr)
		}
	}
}
