package seal

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// ErrNoKeyring means a sealed body was met where no keyring was given: it stays closed, and only
// its hash can be compared.
var ErrNoKeyring = errors.New("sealed body, and no keyring to open it")

// sealedJSON is the JSON a sealed body takes where a JSON column holds it (effects.result_body):
// {"$sealed":{"keyId":"…","box":"<base64 nonce||ciphertext>"}}. No plaintext field remains.
type sealedJSON struct {
	Sealed struct {
		KeyID string `json:"keyId"`
		Box   []byte `json:"box"`
	} `json:"$sealed"`
}

var sealedPrefix = []byte(`{"$sealed":`)

// SealJSON seals plain (a JSON document) for context and returns it in its JSON form.
func (kr *Keyring) SealJSON(plain, context []byte) json.RawMessage {
	var s sealedJSON
	s.Sealed.KeyID, s.Sealed.Box = kr.Seal(plain, context)
	out, _ := json.Marshal(s) // a string and bytes always encode
	return out
}

// IsSealedJSON reports whether raw is a body SealJSON wrote.
func IsSealedJSON(raw []byte) bool { return bytes.HasPrefix(bytes.TrimSpace(raw), sealedPrefix) }

// OpenJSON opens a body SealJSON wrote for context. A nil keyring fails with ErrNoKeyring.
func (kr *Keyring) OpenJSON(raw, context []byte) ([]byte, error) {
	var s sealedJSON
	if err := json.Unmarshal(raw, &s); err != nil || s.Sealed.KeyID == "" {
		return nil, fmt.Errorf("%w: not a sealed body", ErrTampered)
	}
	if kr == nil {
		return nil, fmt.Errorf("%w (key ID %q)", ErrNoKeyring, s.Sealed.KeyID)
	}
	return kr.Open(s.Sealed.KeyID, s.Sealed.Box, context)
}

// ResultContext binds a consumer's sealed result body to its ledger row: consumer, event ID and
// effect version. The SDK seals with it; shadow opens with it.
func ResultContext(consumer, eventID string, effectVersion int) []byte {
	return []byte("replayctl.result\x1f" + consumer + "\x1f" + eventID + "\x1f" + strconv.Itoa(effectVersion))
}
