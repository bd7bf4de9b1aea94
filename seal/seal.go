// Package seal encrypts the short-lived bodies the ledger keeps (an API's stored response, a
// consumer's result body) with AES-256-GCM under a rotating keyring: new seals use the newest key,
// older seals open with the key whose ID they carry. The ledger stores the key ID beside the
// ciphertext, never a key or a plaintext.
package seal

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"
)

// KeySize is the length of every key: AES-256.
const KeySize = 32

var (
	// ErrUnknownKey means a sealed body names a key the keyring does not hold (retired too early,
	// or a keyring of another service).
	ErrUnknownKey = errors.New("sealed with a key this keyring does not hold")
	// ErrTampered means a sealed body failed authentication: changed, truncated, or moved from
	// the row it was sealed for.
	ErrTampered = errors.New("sealed body failed authentication")
	// ErrBadKeyring means a keyring cannot be used (no key, a key of the wrong size, an ID twice).
	ErrBadKeyring = errors.New("bad keyring")
)

// Key is one key of a keyring.
type Key struct {
	// ID is stored beside every body sealed with the key; short and never secret ("2026-12").
	ID string
	// Secret is the AES-256 key.
	Secret []byte
}

// Keyring seals with its newest key and opens with any of its keys.
type Keyring struct {
	newest string
	aeads  map[string]cipher.AEAD
}

// NewKeyring returns a keyring of keys, oldest first: the last one seals.
func NewKeyring(keys ...Key) (*Keyring, error) {
	if len(keys) == 0 {
		return nil, fmt.Errorf("%w: no key; generate one with `replayctl keys keyring new`", ErrBadKeyring)
	}
	kr := &Keyring{aeads: make(map[string]cipher.AEAD, len(keys))}
	for i, k := range keys {
		if k.ID == "" || len(k.ID) > 64 {
			return nil, fmt.Errorf("%w: key %d: an ID of 1 to 64 characters is required", ErrBadKeyring, i+1)
		}
		if len(k.Secret) != KeySize {
			return nil, fmt.Errorf("%w: key %q is %d bytes, want %d (AES-256)", ErrBadKeyring, k.ID, len(k.Secret), KeySize)
		}
		if _, dup := kr.aeads[k.ID]; dup {
			return nil, fmt.Errorf("%w: key ID %q appears twice", ErrBadKeyring, k.ID)
		}
		block, err := aes.NewCipher(k.Secret)
		if err != nil {
			return nil, fmt.Errorf("%w: key %q: %v", ErrBadKeyring, k.ID, err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("%w: key %q: %v", ErrBadKeyring, k.ID, err)
		}
		kr.aeads[k.ID] = aead
		kr.newest = k.ID
	}
	return kr, nil
}

// NewestKeyID is the ID new seals carry.
func (kr *Keyring) NewestKeyID() string { return kr.newest }

// Seal encrypts plaintext under the newest key, bound to context (the row's identity, so a sealed
// body copied to another row does not open). It returns the key ID and nonce||ciphertext.
func (kr *Keyring) Seal(plaintext, context []byte) (keyID string, sealed []byte) {
	aead := kr.aeads[kr.newest]
	nonce := make([]byte, aead.NonceSize(), aead.NonceSize()+len(plaintext)+aead.Overhead())
	// crypto/rand.Read never fails (Go 1.24 and later) and a random 96-bit nonce is safe for far
	// more seals per key than a ledger makes between rotations.
	_, _ = rand.Read(nonce)
	return kr.newest, aead.Seal(nonce, nonce, plaintext, context)
}

// Open decrypts a body sealed under keyID for context.
func (kr *Keyring) Open(keyID string, sealed, context []byte) ([]byte, error) {
	aead, ok := kr.aeads[keyID]
	if !ok {
		return nil, fmt.Errorf("%w: key ID %q", ErrUnknownKey, keyID)
	}
	if len(sealed) < aead.NonceSize()+aead.Overhead() {
		return nil, fmt.Errorf("%w: %d bytes is shorter than a nonce and a tag", ErrTampered, len(sealed))
	}
	plain, err := aead.Open(nil, sealed[:aead.NonceSize()], sealed[aead.NonceSize():], context)
	if err != nil {
		return nil, fmt.Errorf("%w (key ID %q)", ErrTampered, keyID)
	}
	return plain, nil
}
