package billing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/replayctl/replayctl/apikey"
	"github.com/replayctl/replayctl/idempotency"
)

// ChargesRoute is the billing API's one route: POST /v1/charges takes the order JSON the
// consumer takes and charges it once per Idempotency-Key; p's charges answer its look-up.
func ChargesRoute(p *Provider) idempotency.Route {
	return idempotency.Route{
		Method: http.MethodPost, Template: "/v1/charges", RequireKey: true, Irreversible: true,
		// The product contract behind the windows (docs/api.md, "Retention is a contract"): a
		// client retries for up to a day, the mobile app's offline queue resends for up to three
		// days, and a card dispute may ask about a charge 120 days later.
		Retention: apikey.Delays{ClientRetry: 24 * time.Hour, OfflineResend: 72 * time.Hour, Inquiry: 120 * 24 * time.Hour},
		// The app's support tools replay a customer's archived requests for up to a year after
		// the inquiry window: a key's tombstone must outlive that.
		TombstoneRetention: 365 * 24 * time.Hour,
		Lookup:             APILookup(p),
	}
}

// APIHandler returns the handler of POST /v1/charges, charging through p under the request's
// idempotency operation ID and answering 201 with the receipt. It never logs the order.
func APIHandler(p *Provider, now func() time.Time) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var o Order
		if err := json.NewDecoder(r.Body).Decode(&o); err != nil || o.OrderID == "" || o.AmountCents <= 0 {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "the body must be an order: {orderId, customer, amountCents > 0, currency}"})
			return
		}
		if o.Currency == "" {
			writeJSON(w, http.StatusUnprocessableEntity, map[string]string{"error": "order has no currency"})
			return
		}
		receipt := ReceiptFor(o, FixedVersion, now())
		op := idempotency.OperationID(r.Context())
		chargeID, err := idempotency.Call(r.Context(), EffectCharge, func(ctx context.Context) (string, error) {
			// op is the provider's idempotency key: a call that outlived its lease and a retry
			// the look-up let through are one charge at the provider, never two (docs/api.md).
			ref, err := p.ChargeOperation(ctx, op, o.OrderID, receipt.TotalCents, o.Currency)
			if _, charged := errors.AsType[*OrderChargedError](err); charged || errors.Is(err, ErrInvalidRequest) || errors.Is(err, ErrConnectRefused) {
				return "", idempotency.NotExecuted(err)
			}
			return ref, err
		})
		if charged, ok := errors.AsType[*OrderChargedError](err); ok {
			// A key is not the order: the same order under a second key (another retry
			// library, another principal) is answered with the charge that stands, not charged.
			writeJSON(w, http.StatusConflict, map[string]string{
				"error":    "this order is already charged under another Idempotency-Key; nothing was charged by this request",
				"chargeId": charged.ChargeID,
			})
			return
		}
		switch {
		case errors.Is(err, ErrInvalidRequest):
			writeJSON(w, http.StatusUnprocessableEntity, map[string]string{"error": "the payment provider refused the order as invalid"})
			return
		case err != nil:
			writeJSON(w, http.StatusBadGateway, map[string]string{"error": "the payment provider did not answer; retry with the same Idempotency-Key"})
			return
		}
		writeJSON(w, http.StatusCreated, struct {
			Receipt
			ChargeID string `json:"chargeId"`
		}{receipt, chargeID})
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// APILookup answers the middleware's look-ups from the provider's charges under the request's
// operation ID: one charge happened, none did not happen, more than one is unknown (a person
// looks). The fake provider writes a charge before it answers, so "none" is final once the
// record's lease lapsed.
func APILookup(p *Provider) idempotency.LookupFunc {
	return func(ctx context.Context, req idempotency.LookupRequest) (idempotency.LookupResult, error) {
		charges, err := p.ChargesOfOperation(ctx, req.OperationID)
		if err != nil {
			return idempotency.LookupResult{}, err
		}
		switch len(charges) {
		case 0:
			return idempotency.LookupResult{Verdict: idempotency.VerdictNotHappened, Detail: "the provider has no charge of the operation"}, nil
		case 1:
			return idempotency.LookupResult{Verdict: idempotency.VerdictHappened, ExternalRef: charges[0].ID, Detail: "the provider charged the operation once"}, nil
		default:
			return idempotency.LookupResult{Verdict: idempotency.VerdictUnknown, Detail: fmt.Sprintf("the provider charged the operation %d times", len(charges))}, nil
		}
	}
}
