package fault_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/replayctl/replayctl/fault"
)

func TestTheOutermostKindWins(t *testing.T) {
	invalid := fault.New(fault.Invalid, "job not recorded")
	refused := fault.Wrap(fault.Refused, invalid, "recorded digest differs")
	gate := fault.New(fault.Refused, "a gate refused")
	cases := []struct {
		err  error
		want fault.Kind
	}{
		{errors.New("connection reset"), fault.Runtime},
		{fmt.Errorf("plan: %w", invalid), fault.Invalid},
		{refused, fault.Refused},
		{fmt.Errorf("%w: %w", gate, invalid), fault.Refused},
		{fmt.Errorf("read: %w", fmt.Errorf("%w: %w", errors.New("lost"), invalid)), fault.Invalid},
	}
	for _, c := range cases {
		if got := fault.KindOf(c.err); got != c.want {
			t.Errorf("KindOf(%v) = %s, want %s", c.err, got, c.want)
		}
	}
	if !errors.Is(refused, invalid) {
		t.Error("a wrapped sentinel no longer matches its base")
	}
}
