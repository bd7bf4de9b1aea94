package billing

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/replayctl/replayctl/idempotency"
)

// Tokens maps bearer tokens to callers, for the example API's Scope and Authorize.
type Tokens struct {
	mu      sync.RWMutex
	callers map[string]idempotency.Scope
	revoked map[string]bool
}

// DemoTokens is the built-in token set: demo-alice and demo-bob of tenant acme, demo-carol of
// tenant globex.
func DemoTokens() *Tokens {
	return &Tokens{callers: map[string]idempotency.Scope{
		"demo-alice": {Tenant: "acme", Principal: "alice"},
		"demo-bob":   {Tenant: "acme", Principal: "bob"},
		"demo-carol": {Tenant: "globex", Principal: "carol"},
	}, revoked: map[string]bool{}}
}

// ParseTokens reads a token file: "TOKEN TENANT PRINCIPAL [revoked]" a line; # starts a comment.
// Errors name the line, never a token.
func ParseTokens(data []byte) (*Tokens, error) {
	t := &Tokens{callers: map[string]idempotency.Scope{}, revoked: map[string]bool{}}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 3 || len(f) > 4 || (len(f) == 4 && f[3] != "revoked") {
			return nil, fmt.Errorf("tokens line %d: want \"TOKEN TENANT PRINCIPAL [revoked]\"", n)
		}
		t.callers[f[0]] = idempotency.Scope{Tenant: f[1], Principal: f[2]}
		t.revoked[f[0]] = len(f) == 4
	}
	if len(t.callers) == 0 {
		return nil, errors.New("tokens: the file names no token")
	}
	return t, nil
}

// Revoke revokes token: its caller is still known, and every request with it gets 403.
func (t *Tokens) Revoke(token string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.revoked[token] = true
}

var (
	errNoToken = errors.New("no known bearer token")
	errRevoked = errors.New("token revoked")
)

func bearer(r *http.Request) string {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return ""
	}
	return strings.TrimSpace(token)
}

// Scope names the caller of r's bearer token.
func (t *Tokens) Scope(r *http.Request) (idempotency.Scope, error) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	s, ok := t.callers[bearer(r)]
	if !ok {
		return idempotency.Scope{}, errNoToken
	}
	return s, nil
}

// Authorize refuses a revoked token.
func (t *Tokens) Authorize(r *http.Request, _ idempotency.Scope) error {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if t.revoked[bearer(r)] {
		return errRevoked
	}
	return nil
}
