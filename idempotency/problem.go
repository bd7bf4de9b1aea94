package idempotency

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"
)

// ProblemTypeBase starts the type URI of every problem the middleware answers; docs/api.md
// ("Answers") describes each.
const ProblemTypeBase = "https://replayctl.dev/problems/idempotency/"

// Problem is an RFC 9457 problem detail, the body of every answer the middleware gives itself.
type Problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail,omitempty"`
	// ExternalRef is the provider's reference, on an answer that an operation already happened.
	ExternalRef string `json:"externalRef,omitempty"`
}

// The kinds of problem, each with its status (the IETF httpapi Idempotency-Key draft's where it
// names one).
var (
	problemMissingKey      = problemKind{"missing-key", "Idempotency-Key header is required", http.StatusBadRequest}
	problemInvalidKey      = problemKind{"invalid-key", "Idempotency-Key header is not a valid key", http.StatusBadRequest}
	problemUnauthenticated = problemKind{"unauthenticated", "The request's credentials name no caller", http.StatusUnauthorized}
	problemForbidden       = problemKind{"forbidden", "The caller may not make or read this request", http.StatusForbidden}
	problemTooLarge        = problemKind{"body-too-large", "The request body is too large to fingerprint", http.StatusRequestEntityTooLarge}
	problemInProgress      = problemKind{"in-progress", "A request with this key is being processed", http.StatusConflict}
	problemKeyReused       = problemKind{"key-reused", "This key was used for a different request", http.StatusUnprocessableEntity}
	problemUncertain       = problemKind{"outcome-uncertain", "The outcome of the first request with this key is being reviewed", http.StatusServiceUnavailable}
	problemDone            = problemKind{"already-done", "The request with this key already happened; its response is no longer kept", http.StatusGone}
	problemUnavailable     = problemKind{"ledger-unavailable", "The idempotency ledger cannot be reached; nothing was done", http.StatusServiceUnavailable}
	problemUnreadable      = problemKind{"response-unreadable", "The stored response of this key cannot be opened", http.StatusInternalServerError}
	problemHandlerFailed   = problemKind{"handler-failed", "The request failed", http.StatusInternalServerError}
)

type problemKind struct {
	slug, title string
	status      int
}

// write answers the problem with detail; retryAfter > 0 adds Retry-After in whole seconds.
func (k problemKind) write(w http.ResponseWriter, detail, externalRef string, retryAfter time.Duration) {
	h := w.Header()
	h.Set("Content-Type", "application/problem+json")
	h.Set("Cache-Control", "no-store")
	if retryAfter > 0 {
		h.Set("Retry-After", strconv.FormatInt(int64((retryAfter+time.Second-1)/time.Second), 10))
	}
	w.WriteHeader(k.status)
	_ = json.NewEncoder(w).Encode(Problem{Type: ProblemTypeBase + k.slug, Title: k.title, Status: k.status,
		Detail: detail, ExternalRef: externalRef})
}
