package planner

import "testing"

func TestSubjectMatchesAStreamFilterAsNATSDoes(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		filter, subject string
		want            bool
	}{
		{"dlq.billing.>", "dlq.billing.charge", true},
		{"dlq.billing.>", "dlq.billing", false},
		{"dlq.*.charge", "dlq.billing.charge", true},
		{"dlq.*.charge", "dlq.billing.refund", false},
		{"dlq.billing.charge", "dlq.billing.charge", true},
		{"dlq.billing.charge", "dlq.billing.charge.x", false},
		{">", "anything.at.all", true},
		{"billing.*", "billing.charge.requested", false},
	} {
		if got := subjectMatches(c.filter, c.subject); got != c.want {
			t.Errorf("subjectMatches(%q, %q) = %v, want %v", c.filter, c.subject, got, c.want)
		}
	}
}
