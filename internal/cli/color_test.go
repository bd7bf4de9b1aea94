package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/replayctl/replayctl/internal/cli/shared"
	"github.com/replayctl/replayctl/internal/cmdutil"
	"github.com/replayctl/replayctl/internal/iostreams"
	"github.com/replayctl/replayctl/internal/testenv/pgtest"
	"github.com/replayctl/replayctl/ledger/ledgertest"
	"github.com/replayctl/replayctl/shadow"
)

func TestColorShadowVerdictOnlyOnATerminalWithoutNoColor(t *testing.T) {
	for _, tc := range []struct {
		name, noColor string
		tty           bool
		want          bool
	}{{"tty", "", true, true}, {"NO_COLOR=1", "1", true, false}, {"no tty", "", false, false}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("NO_COLOR", tc.noColor)
			for _, r := range []*shadow.Report{
				{JobID: "j", Verdict: shadow.Verdict{Pass: true}},
				{JobID: "j", Verdict: shadow.Verdict{Reasons: []string{"too many changed"}}},
			} {
				ios, _, out, _ := iostreams.Test()
				ios.SetStdoutTTY(tc.tty)
				if err := shared.PrintShadowReport(ios, "r.json", "", r); err != nil {
					t.Fatal(err)
				}
				word := map[bool]string{true: "\x1b[1;32mPASS\x1b[0m", false: "\x1b[1;31mFAIL\x1b[0m"}[r.Verdict.Pass]
				if got := strings.Contains(out.String(), "verdict: "+word); got != tc.want {
					t.Errorf("pass=%v: coloured verdict %v, want %v:\n%q", r.Verdict.Pass, got, tc.want, out.String())
				}
				if !tc.want && strings.Contains(out.String(), "\x1b[") {
					t.Errorf("escape sequence without colour:\n%q", out.String())
				}
			}
		})
	}
}

func TestColorLedgerStatsWarnings(t *testing.T) {
	w := newLedgerWorld(t)
	ledgertest.InsertEffects(t, pgtest.Pool(t, w.store), ledgertest.Effect{EventID: "evt-u", State: "uncertain", UpdatedAgo: 20 * time.Minute})
	for _, tc := range []struct {
		name, noColor string
		tty           bool
		want          string
	}{
		{"tty", "", true, "\n\x1b[1;33mWARN\x1b[0m uncertain: "},
		{"NO_COLOR=1", "1", true, "\nWARN uncertain: "},
		{"no tty", "", false, "\nWARN uncertain: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("NO_COLOR", tc.noColor)
			stdout, stderr, code := runCommand(t, tc.tty, "ledger stats --consumer billing "+w.flags)
			if code != cmdutil.ExitOK || !strings.Contains(stdout, tc.want) {
				t.Fatalf("exit %d, stdout lacks %q:\n%q\n%s", code, tc.want, stdout, stderr)
			}
		})
	}
}
