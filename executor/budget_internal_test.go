package executor

import "testing"

func TestTheBudgetWindowReservesEachTargetInFlight(t *testing.T) {
	t.Parallel()
	b := budgetWindow{budget: 100, maxPerTarget: 2}
	cases := []struct {
		name                                           string
		settled, settledCalls, inFlightCalls, inFlight int64
		holds                                          bool
	}{
		{"nothing made, the first target fits", 0, 0, 0, 0, false},
		{"49 in flight reserved 2 each, the 50th fits", 0, 0, 0, 49, false},
		{"a 51st would pass 100", 0, 0, 0, 50, true},
		{"in flight reserved more than they started", 40, 80, 9, 9, false},
		{"in flight started more than reserved", 40, 80, 30, 9, true},
		{"the last target the budget covers", 49, 98, 0, 0, false},
		{"exhausted", 50, 100, 0, 0, true},
		{"settled targets made 3 each: 60 + 13×3 + 3 > 100", 20, 60, 0, 13, true},
		{"settled targets made 3 each: 60 + 10×3 + 3 <= 100", 20, 60, 0, 10, false},
	}
	for _, tc := range cases {
		b.settled, b.settledCalls, b.inFlightCalls = tc.settled, tc.settledCalls, tc.inFlightCalls
		if got := b.holds(tc.inFlight) != ""; got != tc.holds {
			t.Errorf("%s: holds %v, want %v", tc.name, got, tc.holds)
		}
	}
	if none := (budgetWindow{budget: 0}); none.holds(1000) != "" {
		t.Error("targets measured to make no call are held back by a budget of none")
	}
}
