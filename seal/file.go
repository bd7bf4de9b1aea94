package seal

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"strings"
)

// ParseKeyring reads a keyring file: one key a line, "ID base64-of-32-bytes", oldest first (the
// last line seals); blank lines and lines starting with # are skipped. Errors name the line, never
// a secret.
func ParseKeyring(data []byte) (*Keyring, error) {
	var keys []Key
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		id, encoded, ok := strings.Cut(line, " ")
		if !ok {
			return nil, fmt.Errorf("%w: line %d: want \"ID base64-key\" (see `replayctl keys keyring new`)", ErrBadKeyring, n)
		}
		secret, err := base64.StdEncoding.DecodeString(strings.TrimSpace(encoded))
		if err != nil {
			return nil, fmt.Errorf("%w: line %d (key %q): the key is not standard base64", ErrBadKeyring, n, id)
		}
		keys = append(keys, Key{ID: id, Secret: secret})
	}
	return NewKeyring(keys...)
}

// ReadKeyringFile reads a keyring file (ParseKeyring).
func ReadKeyringFile(path string) (*Keyring, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read keyring: %w", err)
	}
	kr, err := ParseKeyring(data)
	if err != nil {
		return nil, fmt.Errorf("keyring %s: %w", path, err)
	}
	return kr, nil
}

// NewKeyLine returns a keyring line for a new random key with id, to append to a keyring file.
func NewKeyLine(id string) string {
	secret := make([]byte, KeySize)
	_, _ = rand.Read(secret) // never fails since Go 1.24
	return id + " " + base64.StdEncoding.EncodeToString(secret)
}
