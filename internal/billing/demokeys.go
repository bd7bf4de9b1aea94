package billing

import (
	"crypto/sha256"

	"github.com/replayctl/replayctl/seal"
)

// DemoKeySecret and DemoKeyring are the example API's built-in secret and keyring, derived from
// fixed strings so a restarted demo still opens what it sealed. They are public and protect
// nothing: a real service reads its own (-key-secret-file, -keyring).
func DemoKeySecret() []byte {
	sum := sha256.Sum256([]byte("replayctl billing-api demo key secret; not for production"))
	return sum[:]
}

// DemoKeyring is the built-in keyring of DemoKeySecret's kind: one key, "demo-1".
func DemoKeyring() *seal.Keyring {
	sum := sha256.Sum256([]byte("replayctl billing-api demo sealing key; not for production"))
	kr, err := seal.NewKeyring(seal.Key{ID: "demo-1", Secret: sum[:]})
	if err != nil {
		panic(err) // a fixed 32-byte key always makes a keyring
	}
	return kr
}
