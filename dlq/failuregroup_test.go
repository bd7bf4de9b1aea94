package dlq_test

import (
	"testing"

	"github.com/replayctl/replayctl/dlq"
)

func TestFailureGroupMasksWhatVariesBetweenEvents(t *testing.T) {
	for in, want := range map[string]string{
		"timeout after 3012 ms":                               "timeout after <n> ms",
		"timeout after 2998 ms":                               "timeout after <n> ms",
		"order ord-00012 rejected: card 4f9a2c1e99 declined":  "order ord-<n> rejected: card <hex> declined",
		"request 3fa85f64-5717-4562-b3fc-2c963f66afa6 failed": "request <uuid> failed",
		"provider returned 0x1F":                              "provider returned <hex>",
		"bad gateway":                                         "bad gateway",
		"deadline exceeded after 1.5s":                        "deadline exceeded after <n>s",
	} {
		if got := dlq.FailureGroup(in); got != want {
			t.Errorf("FailureGroup(%q) = %q, want %q", in, got, want)
		}
	}
}
