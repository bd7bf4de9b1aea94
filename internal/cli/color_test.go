package cli

import (
	"strings"
	"testing"

	"github.com/replayctl/replayctl/internal/cli/shared"
	"github.com/replayctl/replayctl/internal/cmdutil"
	"github.com/replayctl/replayctl/internal/iostreams"
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
	w.exec(t, `insert into effects (consumer, event_id, effect_version, state, request_hash, updated_at)
values ('billing', 'evt-u', 1, 'uncertain', 'sha256:u', now() - interval '20 minutes')`)
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
