// Package sshtest makes SSH keys for tests the way operators make theirs, with ssh-keygen.
package sshtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Key makes a key of keyType (ed25519, ecdsa, rsa) without a passphrase at dir/name and returns
// its private key path and its public key line ("ssh-ed25519 AAAA... name"). It skips the test
// when ssh-keygen is not installed.
func Key(t testing.TB, dir, name, keyType string) (path, pub string) {
	t.Helper()
	if _, err := exec.LookPath("ssh-keygen"); err != nil {
		t.Skip("ssh-keygen is not installed")
	}
	path = filepath.Join(dir, name)
	if out, err := exec.Command("ssh-keygen", "-q", "-t", keyType, "-N", "", "-C", name, "-f", path).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen -t %s: %v\n%s", keyType, err, out)
	}
	b, err := os.ReadFile(path + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	return path, strings.TrimSpace(string(b))
}
