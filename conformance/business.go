package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/replayctl/replayctl/dlq"
	"github.com/replayctl/replayctl/fingerprint"
	"github.com/replayctl/replayctl/seal"
)

// businessFailure sends an order the service refuses for good (no currency): the SDK must record
// it as a completed row of outcome kind business whose result is {"error": …} (the one shape
// shadow counts as a failure), make no call, acknowledge it once (no retry, no dead letter), and
// treat a copy as a duplicate.
func businessFailure(ctx context.Context, e *Env) error {
	id := e.event("business")
	payload := []byte(fmt.Sprintf(`{"orderId":"order-%s","customer":"conformance","amountCents":100}`, id))
	dead, err := e.NC.SubscribeSync(DLQSubject)
	if err != nil {
		return err
	}
	defer func() { _ = dead.Unsubscribe() }()
	if _, err := e.publish(ctx, id, payload, nil); err != nil {
		return err
	}
	if _, err := e.waitRow(ctx, id, 1, stateCompleted); err != nil {
		return fmt.Errorf("an order without a currency (a business failure): %w", err)
	}
	if err := e.deliver(ctx, id, payload, nil); err != nil {
		return err
	}
	r, err := e.onlyRow(ctx, id)
	if err != nil {
		return err
	}
	if r.OutcomeKind != "business" || r.EffectCount != 0 || r.Attempts != 1 {
		return fmt.Errorf("the row of %s has outcome kind %q, %d effects, %d attempts; want business, 0, 1 (recorded once, never retried)",
			id, r.OutcomeKind, r.EffectCount, r.Attempts)
	}
	body := []byte(r.ResultBody)
	if seal.IsSealedJSON(body) && e.ResultKeyring != nil {
		if body, err = e.ResultKeyring.OpenJSON(body, seal.ResultContext(ConsumerName, id, 1)); err != nil {
			return fmt.Errorf("open the result of %s: %w", id, err)
		}
	}
	var result map[string]any
	if err := json.Unmarshal(body, &result); err != nil || len(result) != 1 || result["error"] == nil {
		return fmt.Errorf("the result of %s is %s, want {\"error\": the business failure's message}", id, strings.TrimSpace(string(body)))
	}
	if got := fingerprint.Payload(body); got != r.ResultHash {
		return fmt.Errorf("result_hash of %s is %s, the fingerprint of its result %s", id, r.ResultHash, got)
	}
	for {
		m, err := dead.NextMsg(200 * time.Millisecond)
		if err != nil {
			break // none (left)
		}
		if m.Header.Get(dlq.HeaderEventID) == id {
			return fmt.Errorf("the business failure of %s was dead-lettered (%s): it is an outcome, recorded and acknowledged", id, m.Header.Get(dlq.HeaderReason))
		}
	}
	return e.wantCharges(ctx, id, 0)
}
