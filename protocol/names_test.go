package protocol_test

import (
	"strings"
	"testing"

	"github.com/replayctl/replayctl/protocol"
)

func TestValidateConsumerName(t *testing.T) {
	for _, ok := range []string{"payments", "Payments_v2", "a", "x-y-z", strings.Repeat("c", 64)} {
		if err := protocol.ValidateConsumerName(ok); err != nil {
			t.Errorf("ValidateConsumerName(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", "pay.ments", "pay ments", "pay*", "pay>", "päy", strings.Repeat("c", 65)} {
		err := protocol.ValidateConsumerName(bad)
		want := `consumer name "` + bad + `" is not allowed: use 1-64 characters from A-Z a-z 0-9 _ - ` +
			`(it becomes the NATS subject token in replay.shadow.<consumer>)`
		if err == nil || err.Error() != want {
			t.Errorf("ValidateConsumerName(%q) = %v\nwant %s", bad, err, want)
		}
	}
}

func TestValidateStreamName(t *testing.T) {
	for _, ok := range []string{"PAYMENTS_DLQ", "dlq-1", strings.Repeat("S", 255)} {
		if err := protocol.ValidateStreamName(ok); err != nil {
			t.Errorf("ValidateStreamName(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", "DLQ.payments", "DLQ payments", "DLQ/x", strings.Repeat("S", 256)} {
		if err := protocol.ValidateStreamName(bad); err == nil || !strings.Contains(err.Error(), "use 1-255 characters from A-Z a-z 0-9 _ -") {
			t.Errorf("ValidateStreamName(%q) = %v, want the allowed alphabet", bad, err)
		}
	}
}

func TestValidateEventID(t *testing.T) {
	for _, ok := range []string{"e", "ord_123", "order 123", "注文-1", strings.Repeat("e", 256)} {
		if err := protocol.ValidateEventID(ok); err != nil {
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
		if err := protocol.ValidateEventID(bad); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ValidateEventID(%q) = %v, want %q", bad, err, want)
		}
	}
}

func TestValidateJobID(t *testing.T) {
	for _, ok := range []string{"j", "job-2025.03.02_1", strings.Repeat("j", 128)} {
		if err := protocol.ValidateJobID(ok); err != nil {
			t.Errorf("ValidateJobID(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", "-job", "job/1", "job\n", strings.Repeat("j", 129)} {
		if err := protocol.ValidateJobID(bad); err == nil {
			t.Errorf("ValidateJobID(%q) accepted it", bad)
		}
	}
}
