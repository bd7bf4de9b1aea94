package idempotency

import "context"

// Verdict is a look-up's answer about one external call.
type Verdict string

// The verdicts of a look-up.
const (
	VerdictHappened    Verdict = "happened"
	VerdictNotHappened Verdict = "not_happened"
	VerdictUnknown     Verdict = "unknown"
)

// LookupRequest names the call a look-up asks about. It holds no payload: the ledger keeps none.
type LookupRequest struct {
	Route string
	// OperationID is what the handler passed to the provider (OperationID).
	OperationID string
	// ExternalRef is the provider's reference the record kept, if any.
	ExternalRef string
}

// LookupResult is a look-up's answer.
type LookupResult struct {
	Verdict     Verdict
	ExternalRef string
	// Detail says what was found, for the record's note; no payload field.
	Detail string
}

// LookupFunc asks the provider whether a request's external call happened. It must answer
// VerdictUnknown, never a guess, when the provider cannot tell.
type LookupFunc func(ctx context.Context, req LookupRequest) (LookupResult, error)

func lookupLabel(v Verdict, err error) string {
	if err != nil {
		return "error"
	}
	switch v {
	case VerdictHappened, VerdictNotHappened:
		return string(v)
	}
	return string(VerdictUnknown)
}
