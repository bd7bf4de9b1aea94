package manifest_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/replayctl/replayctl/manifest"
)

func TestValidateReason(t *testing.T) {
	for _, r := range []string{"replay", "fix", "Test", "TODO", "asdf", "n/a", "Replay  DLQ", " replay dlq "} {
		err := manifest.ValidateReason(r)
		if err == nil || !strings.HasSuffix(err.Error(), fmt.Sprintf("; %q is a placeholder", strings.TrimSpace(r))) {
			t.Errorf("ValidateReason(%q) = %v, want it called a placeholder", r, err)
		}
	}
	trivial := []string{
		"", "   ", "replay", "Replay", "fix", "FIX", "test", "todo", "asdf", "n/a", "N/A", "replay dlq",
		"Replay  DLQ", " tbd ", "asdf asdf asdf asdf", "test test test", "fixing it", "replay all failed messages",
		"retry the dlq messages again",
	}
	for _, r := range trivial {
		err := manifest.ValidateReason(r)
		if err == nil {
			t.Errorf("ValidateReason(%q) accepted a trivial reason", r)
			continue
		}
		const hint = "must say why the replay is needed and what changed, e.g. 'provider outage INC-4521 fixed; re-run failed charges'"
		if !strings.HasPrefix(err.Error(), hint) {
			t.Errorf("ValidateReason(%q) = %q, want it to start with the hint", r, err)
		}
	}
	good := []string{
		"provider outage INC-4521 fixed; re-run failed charges",
		"schema bug in v1.4.2 rolled back, replay rejected orders",
		"Stripe 503s 10:00-10:40 UTC",
		"timeout raised to 30s after DB failover",
	}
	for _, r := range good {
		if err := manifest.ValidateReason(r); err != nil {
			t.Errorf("ValidateReason(%q) = %v, want nil", r, err)
		}
	}
}
