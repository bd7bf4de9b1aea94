package shadow

import "testing"

func TestBusinessFailureIsTheLedgersErrorBodyOnly(t *testing.T) {
	t.Parallel()
	for body, want := range map[string]bool{
		`{"error":"order has no currency"}`: true,
		` { "error" : "card declined" } `:   true,
		`{"error":"x","feeCents":3}`:        false,
		`{"error":null}`:                    false,
		`{"error":{"code":1}}`:              false,
		`{"status":"charged","feeCents":3}`: false,
		`["error"]`:                         false,
		`"error"`:                           false,
	} {
		if _, got := businessFailure([]byte(body)); got != want {
			t.Errorf("businessFailure(%s) = %v, want %v", body, got, want)
		}
	}
}
