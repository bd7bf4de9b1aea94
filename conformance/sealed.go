package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/replayctl/replayctl/fingerprint"
	"github.com/replayctl/replayctl/seal"
)

// sealedResult checks that a consumer given a keyring stores its result bodies sealed: the body
// is {"$sealed":…} with no field of the receipt left in it, carries the keyring's newest key ID,
// opens with the kit's copy of the keyring for its own row only (Go's package seal, so an SDK in
// another language is checked against Go's format), and its plaintext is what result_hash
// fingerprints.
func sealedResult(ctx context.Context, e *Env) error {
	if e.ResultKeyring == nil {
		return fmt.Errorf("the kit gave the consumer no keyring")
	}
	id := e.event("sealed")
	if err := e.completeOnce(ctx, id, 100); err != nil {
		return err
	}
	row, err := e.onlyRow(ctx, id)
	if err != nil {
		return err
	}
	body := row.ResultBody
	if !seal.IsSealedJSON(body) {
		return fmt.Errorf("the result body of %s is stored as it is (%d bytes), not sealed with the keyring in $%s", id, len(body), ResultKeyringEnv)
	}
	if strings.Contains(string(body), "order-"+id) {
		return fmt.Errorf("the sealed result body of %s still holds the order ID in plaintext", id)
	}
	var s struct {
		Sealed struct {
			KeyID string `json:"keyId"`
		} `json:"$sealed"`
	}
	if err := json.Unmarshal(body, &s); err != nil || s.Sealed.KeyID != e.ResultKeyring.NewestKeyID() {
		return fmt.Errorf("the sealed result body of %s names key %q, want the keyring's newest, %q", id, s.Sealed.KeyID, e.ResultKeyring.NewestKeyID())
	}
	plain, err := e.ResultKeyring.OpenJSON(body, seal.ResultContext(ConsumerName, id, 1))
	if err != nil {
		return fmt.Errorf("the sealed result body of %s does not open for its row (consumer, event, version 1): %w", id, err)
	}
	if _, err := e.ResultKeyring.OpenJSON(body, seal.ResultContext(ConsumerName, id, 2)); err == nil {
		return fmt.Errorf("the sealed result body of %s opens for another row (version 2): it is not bound to its row", id)
	}
	if !json.Valid(plain) || !strings.Contains(string(plain), "order-"+id) {
		return fmt.Errorf("the sealed result body of %s opens to %q, not the receipt of order-%s", id, plain, id)
	}
	if got := fingerprint.Payload(plain); got != row.ResultHash {
		return fmt.Errorf("result_hash of %s is %s; the fingerprint of the opened body is %s (the hash must be over the plaintext)", id, row.ResultHash, got)
	}
	return nil
}
