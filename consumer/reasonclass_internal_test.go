package consumer

import (
	"errors"
	"fmt"
	"testing"
)

// Two thousand orders failing for one cause must give one reason class, or plan's histogram
// shows one row per event (issue 16).
func TestReasonClassIsTheCauseWithoutTheEventData(t *testing.T) {
	t.Parallel()
	unavailable := errors.New("payments provider unavailable")
	classes := map[string]int{}
	for i := range 2000 {
		classes[reasonClass(fmt.Errorf("charge order o-%d: %w", i, unavailable))]++
	}
	if len(classes) != 1 || classes["payments provider unavailable"] != 2000 {
		t.Fatalf("2,000 failures of one cause gave classes %v, want one", classes)
	}
	for _, c := range []struct {
		name string
		err  error
		want string
	}{
		{"a marked class wins over the root cause", fmt.Errorf("order o-1: %w", WithReasonClass("card declined", errors.New("code 51 for o-1"))), "card declined"},
		{"an unwrapped error is its own class", errors.New("timeout"), "timeout"},
		{"the first of joined causes", fmt.Errorf("%w: Event-Id header: %w", ErrInvalidMessage, errors.New("empty")), "invalid message"},
		{"a panic", fmt.Errorf("%w on event %q: %s", errHandlerPanicked, "e1", "nil map"), "handler panicked"},
	} {
		if got := reasonClass(c.err); got != c.want {
			t.Errorf("%s: reasonClass(%q) = %q, want %q", c.name, c.err, got, c.want)
		}
	}
	if WithReasonClass("x", nil) != nil {
		t.Error("WithReasonClass(x, nil) is not nil")
	}
}
