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

func TestValidateConsumerName(t *testing.T) {
	for _, ok := range []string{"payments", "Payments_v2", "a", "x-y-z", strings.Repeat("c", 64)} {
		if err := manifest.ValidateConsumerName(ok); err != nil {
			t.Errorf("ValidateConsumerName(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", "pay.ments", "pay ments", "pay*", "pay>", "päy", strings.Repeat("c", 65)} {
		err := manifest.ValidateConsumerName(bad)
		want := `consumer name "` + bad + `" is not allowed: use 1-64 characters from A-Z a-z 0-9 _ - ` +
			`(it becomes the NATS subject token in replay.shadow.<consumer>)`
		if err == nil || err.Error() != want {
			t.Errorf("ValidateConsumerName(%q) = %v\nwant %s", bad, err, want)
		}
	}
}

func TestValidateStreamName(t *testing.T) {
	for _, ok := range []string{"PAYMENTS_DLQ", "dlq-1", strings.Repeat("S", 255)} {
		if err := manifest.ValidateStreamName(ok); err != nil {
			t.Errorf("ValidateStreamName(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", "DLQ.payments", "DLQ payments", "DLQ/x", strings.Repeat("S", 256)} {
		if err := manifest.ValidateStreamName(bad); err == nil || !strings.Contains(err.Error(), "use 1-255 characters from A-Z a-z 0-9 _ -") {
			t.Errorf("ValidateStreamName(%q) = %v, want the allowed alphabet", bad, err)
		}
	}
}

func TestValidateEventID(t *testing.T) {
	for _, ok := range []string{"e", "ord_123", "order 123", "注文-1", strings.Repeat("e", 256)} {
		if err := manifest.ValidateEventID(ok); err != nil {
			t.Errorf("ValidateEventID(%q) = %v", ok, err)
		}
	}
	for bad, want := range map[string]string{
		"":                       "event ID is empty",
		strings.Repeat("e", 257): "is 257 bytes; the limit is 256",
		"e\xc3":                  `event ID "e\xc3" is not valid UTF-8`,
		"e\n1":                   `event ID "e\n1" contains the control character U+000A`,
		"e\u00851":               "contains the control character U+0085",
		"e1 ":                    `event ID "e1 " has leading or trailing white space`,
		"\u00a0e1":               "has leading or trailing white space",
	} {
		if err := manifest.ValidateEventID(bad); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ValidateEventID(%q) = %v, want %q", bad, err, want)
		}
	}
}

func TestValidateJobID(t *testing.T) {
	for _, ok := range []string{"j", "job-2025.03.02_1", strings.Repeat("j", 128)} {
		if err := manifest.ValidateJobID(ok); err != nil {
			t.Errorf("ValidateJobID(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", "-job", "job/1", "job\n", strings.Repeat("j", 129)} {
		if err := manifest.ValidateJobID(bad); err == nil {
			t.Errorf("ValidateJobID(%q) accepted it", bad)
		}
	}
}
