package billing_test

import (
	"testing"
	"time"

	"github.com/replayctl/replayctl/internal/billing"
)

func TestVersionTwoRoundsTheFeeVersionOneTruncates(t *testing.T) {
	for _, tc := range []struct {
		amount, v1, v2 int64
	}{
		{1000, 29, 29}, // 29.0: both agree
		{1020, 29, 30}, // 29.58: v1 truncates, v2 rounds up
		{1010, 29, 29}, // 29.29: both round down
		{0, 0, 0},
	} {
		if got := billing.FeeCents(tc.amount, 1); got != tc.v1 {
			t.Errorf("FeeCents(%d, v1) = %d, want %d", tc.amount, got, tc.v1)
		}
		if got := billing.FeeCents(tc.amount, billing.FixedVersion); got != tc.v2 {
			t.Errorf("FeeCents(%d, v2) = %d, want %d", tc.amount, got, tc.v2)
		}
	}
}

func TestReceiptTotalsTheFee(t *testing.T) {
	at := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	r := billing.ReceiptFor(billing.Order{OrderID: "ord-1", AmountCents: 1020, Currency: "EUR"}, 2, at)
	if r.FeeCents != 30 || r.TotalCents != 1050 || r.ProcessedAt != "2026-12-02T03:00:00Z" || r.Status != "charged" {
		t.Fatalf("receipt %+v", r)
	}
}
