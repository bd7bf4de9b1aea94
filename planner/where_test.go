package planner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestWhereRefusesAnExpressionWhoseEstimateIsOverTheCostLimit(t *testing.T) {
	t.Parallel()
	for _, nested := range []string{
		`payload.items.exists(a, payload.items.exists(b, a == b))`,
		`payload.items.map(a, payload.items.filter(b, b > a).size()).exists(n, n > 3)`,
		`payload.items.exists(a, payload.items.exists(b, payload.items.exists(c, a == b && b == c)))`,
	} {
		if _, err := compileWhere(nested); err == nil || !strings.Contains(err.Error(), "over the limit") {
			t.Errorf("%s: %v, want a refusal over the cost limit", nested, err)
		}
	}
	for _, ok := range []string{`payload.items.exists(i, i.sku == "x")`, `payload.amountCents > 50000`, `size(payload.items) > 3`} {
		if _, err := compileWhere(ok); err != nil {
			t.Errorf("%s refused: %v", ok, err)
		}
	}
}

func TestWhereCountsAMessageOverTheCostLimitAsAWhereError(t *testing.T) {
	t.Parallel()
	// Estimated on lists of 10 elements, within the limit; run on one of 10,000, over it.
	w, err := compileWhereWithin(`payload.items.exists(i, i == -1)`, 1_000, 10)
	if err != nil {
		t.Fatal(err)
	}
	got, err := w.match(t.Context(), listPayload(10_000), nil)
	if got != whereError || !errors.Is(err, errWhereTooCostly) {
		t.Fatalf("a 10,000-element list under a limit of 1,000: %v %v", got, err)
	}
	if got, err := w.match(t.Context(), listPayload(10), nil); got != whereNotMatched || err != nil {
		t.Fatalf("a 10-element list: %v %v", got, err)
	}
}

func TestWhereStopsWhenTheCommandIsInterrupted(t *testing.T) {
	t.Parallel()
	// Within the cost limit on a list of 400,000 elements, and long enough to be interrupted.
	w, err := compileWhere(`payload.items.exists(i, i == -1)`)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if got, err := w.match(ctx, listPayload(400_000), nil); !errors.Is(err, context.Canceled) || got != whereError {
		t.Fatalf("interrupted: %v %v, want the context's error", got, err)
	}
	if got, err := w.match(t.Context(), listPayload(400_000), nil); got != whereNotMatched || err != nil {
		t.Fatalf("not interrupted: %v %v", got, err)
	}
}

func TestWhereComparesJSONIntegersExactly(t *testing.T) {
	t.Parallel()
	w, err := compileWhere(`payload.amountCents == 9007199254740992`)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := w.match(t.Context(), []byte(`{"amountCents": 9007199254740993}`), nil); got != whereNotMatched || err != nil {
		t.Fatalf("...993 against ...992: %v %v", got, err)
	}
	if got, _ := w.match(t.Context(), []byte(`{"amountCents": 9007199254740992}`), nil); got != whereMatched {
		t.Fatalf("...992 against itself: %v", got)
	}
	for expr, body := range map[string]string{
		`payload.amountCents > 50000.5`:                `{"amountCents": 50001}`,
		`payload.amountCents == 12`:                    `{"amountCents": 12}`,
		`payload.rate < 0.25`:                          `{"rate": 0.2}`,
		`payload.big == 18446744073709551615u`:         `{"big": 18446744073709551615}`,
		`payload.amountCents + 1 == 50002`:             `{"amountCents": 50001}`,
		`headers["Nats-Msg-Id"] == "" || true`:         `{}`,
		`payload.items.exists(i, i.qty > 2)`:           `{"items": [{"qty": 3}]}`,
		`payload.amountCents >= 100 && payload.ok`:     `{"amountCents": 100, "ok": true}`,
		`int(payload.amountCents / 100) == 500`:        `{"amountCents": 50000}`,
		`payload.amountCents == 1.0`:                   `{"amountCents": 1}`,
		`payload.amountCents < 9223372036854775807`:    `{"amountCents": 1}`,
		`string(payload.amountCents) == "12345678901"`: `{"amountCents": 12345678901}`,
		`payload.f == 1.5`:                             `{"f": 1.5}`,
		`payload.n == -3`:                              `{"n": -3}`,
		`payload.e == 100`:                             `{"e": 1e2}`,
	} {
		w, err := compileWhere(expr)
		if err != nil {
			t.Errorf("%s: %v", expr, err)
			continue
		}
		if got, err := w.match(t.Context(), []byte(body), nil); got != whereMatched {
			t.Errorf("%s on %s: %v %v", expr, body, got, err)
		}
	}
}

func listPayload(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"items":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%d", i)
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}
