package idempotency

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"os"
)

// ReadKeySecretFile reads the HMAC secret of the keys: the file holds it in standard base64
// (`head -c 32 /dev/urandom | base64`), at least 32 bytes decoded. The error never shows it.
func ReadKeySecretFile(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read the key secret: %w", err)
	}
	secret, err := base64.StdEncoding.DecodeString(string(bytes.TrimSpace(data)))
	if err != nil {
		return nil, fmt.Errorf("key secret %s: not standard base64; make one with `head -c 32 /dev/urandom | base64`", path)
	}
	if len(secret) < minSecret {
		return nil, fmt.Errorf("key secret %s: %d bytes, want at least %d", path, len(secret), minSecret)
	}
	return secret, nil
}
