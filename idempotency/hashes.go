package idempotency

import (
	"errors"
	"net/http"

	"github.com/replayctl/replayctl/apikey"
)

// KeyHeader is the request header of the IETF httpapi Idempotency-Key draft.
const KeyHeader = "Idempotency-Key"

// ReplayedHeader marks a response given from the ledger rather than by the handler.
const ReplayedHeader = "Idempotent-Replayed"

// maxKeyLength bounds a key: the draft's keys are UUIDs or similar, and a longer one is a mistake.
const maxKeyLength = apikey.MaxKeyLength

var errBadKey = errors.New("bad key")

// requestKey reads the request's key. The draft sends it as a Structured Field string
// ("\"8e03978e-…\""); a bare token is accepted too. present is false when there is none.
func requestKey(h http.Header) (key string, present bool, err error) {
	values := h.Values(KeyHeader)
	if len(values) == 0 {
		return "", false, nil
	}
	if len(values) > 1 {
		return "", true, errBadKey
	}
	key, err = apikey.ParseKey(values[0])
	if err != nil {
		return "", true, errBadKey
	}
	return key, true, nil
}

// HashKey is apikey.HashKey: the stored form of a raw key.
func HashKey(secret []byte, rawKey string) string { return apikey.HashKey(secret, rawKey) }

// ScopeHash is the stored scope of a request: tenant, principal, method and route template.
func ScopeHash(s Scope, route string) string { return apikey.ScopeHash(s.Tenant, s.Principal, route) }

// ClientHash names a caller in the daily counts without naming it.
func ClientHash(s Scope) string { return apikey.ClientHash(s.Tenant, s.Principal) }
