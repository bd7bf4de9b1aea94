package billing

import (
	"context"
	"errors"
	"testing"

	"github.com/replayctl/replayctl/consumer"
)

// Only the failures that prove the provider did nothing may be marked: a 5xx after the charge
// went through must stay unmarked, or the SDK would retry it and charge again.
func TestOnlyFailuresBeforeTheProviderActedAreMarkedNotExecuted(t *testing.T) {
	errServer := errors.New("payment provider answered 503")
	for _, tc := range []struct {
		name          string
		before, after error
		charges       int64
		notExecuted   bool
	}{
		{"connect refused", ErrConnectRefused, nil, 0, true},
		{"validation refusal", ErrInvalidRequest, nil, 0, true},
		{"5xx after charging", nil, errServer, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := NewProvider()
			p.Fail = func(string, string) error { return tc.before }
			p.FailAfter = func(string, string) error { return tc.after }
			_, err := markNotExecuted(p.Charge(context.Background(), "ord-1", 1050, "EUR"))
			if err == nil {
				t.Fatal("the failing charge returned no error")
			}
			if got := errors.Is(err, consumer.ErrNotExecuted); got != tc.notExecuted {
				t.Fatalf("marked not executed: %v, want %v (%v)", got, tc.notExecuted, err)
			}
			if n := p.Charges("ord-1"); n != tc.charges {
				t.Fatalf("provider charges %d, want %d", n, tc.charges)
			}
		})
	}
}
