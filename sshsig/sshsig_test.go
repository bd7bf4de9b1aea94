package sshsig_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/replayctl/replayctl/internal/testenv/sshtest"
	"github.com/replayctl/replayctl/sshsig"
)

// keygen makes a key with ssh-keygen in dir and returns its private key path.
func keygen(t *testing.T, dir, name, keyType string) string {
	t.Helper()
	path, _ := sshtest.Key(t, dir, name, keyType)
	return path
}

func publicKey(t *testing.T, path string) ssh.PublicKey {
	t.Helper()
	data, err := os.ReadFile(path + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	k, _, _, _, err := ssh.ParseAuthorizedKey(data)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// Both directions against OpenSSH, for the key types operators hold: ssh-keygen's signatures
// verify here, and ours verify with ssh-keygen -Y verify.
func TestSignaturesInteroperateWithSSHKeygen(t *testing.T) {
	dir := t.TempDir()
	for _, kt := range []string{"ed25519", "ecdsa", "rsa"} {
		t.Run(kt, func(t *testing.T) {
			key := keygen(t, dir, "id_"+kt, kt)
			msg := filepath.Join(dir, kt+".statement")
			if err := os.WriteFile(msg, []byte("replayctl-approval v1\njob: job-1\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command("ssh-keygen", "-Y", "sign", "-n", "replayctl-approval", "-f", key, msg).CombinedOutput(); err != nil {
				t.Fatalf("ssh-keygen -Y sign: %v\n%s", err, out)
			}
			theirs, err := os.ReadFile(msg + ".sig")
			if err != nil {
				t.Fatal(err)
			}
			pub, err := sshsig.Verify(theirs, "replayctl-approval", []byte("replayctl-approval v1\njob: job-1\n"))
			if err != nil || ssh.FingerprintSHA256(pub) != ssh.FingerprintSHA256(publicKey(t, key)) {
				t.Fatalf("ssh-keygen's signature: key %v, %v", pub, err)
			}
			if _, err := sshsig.Verify(theirs, "replayctl-approval", []byte("replayctl-approval v1\njob: job-2\n")); !errors.Is(err, sshsig.ErrBadSignature) {
				t.Errorf("a signature over job-1 verified for job-2: %v", err)
			}
			if _, err := sshsig.Verify(theirs, "git", []byte("replayctl-approval v1\njob: job-1\n")); !errors.Is(err, sshsig.ErrBadSignature) {
				t.Errorf("a signature verified in another namespace: %v", err)
			}

			signer, err := sshsig.LoadSigner(key)
			if err != nil {
				t.Fatal(err)
			}
			ours, err := sshsig.Sign(signer, "replayctl-approval", []byte("replayctl-approval v1\njob: job-1\n"))
			if err != nil {
				t.Fatal(err)
			}
			signers := filepath.Join(dir, kt+".allowed")
			line := "alice@example.com " + sshsig.AuthorizedKey(publicKey(t, key)) + "\n"
			if err := os.WriteFile(signers, []byte(line), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(msg+".ours", ours, 0o600); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command("ssh-keygen", "-Y", "verify", "-f", signers, "-I", "alice@example.com", "-n", "replayctl-approval", "-s", msg+".ours")
			cmd.Stdin = strings.NewReader("replayctl-approval v1\njob: job-1\n")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("ssh-keygen -Y verify refused our signature: %v\n%s", err, out)
			}
		})
	}
}

func TestAllowedSignersNameThePrincipalOfAKeyInItsNamespaceAndTime(t *testing.T) {
	dir := t.TempDir()
	a, b := publicKey(t, keygen(t, dir, "a", "ed25519")), publicKey(t, keygen(t, dir, "b", "ecdsa"))
	file := "# approvers of billing\n" +
		"alice@example.com,alice " + sshsig.AuthorizedKey(a) + " alice laptop\n" +
		"\n" +
		`bob@example.com namespaces="replayctl-policy",valid-before="20300101" ` + sshsig.AuthorizedKey(b) + "\n"
	signers, err := sshsig.ParseAllowedSigners([]byte(file))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
	if p, ok := signers.Principal(a, "replayctl-approval", now); !ok || p != "alice@example.com" {
		t.Errorf("alice's key: %q %v", p, ok)
	}
	if _, ok := signers.Principal(b, "replayctl-approval", now); ok {
		t.Error("bob's key counted outside its namespaces")
	}
	if p, ok := signers.Principal(b, "replayctl-policy", now); !ok || p != "bob@example.com" {
		t.Errorf("bob's key for policy changes: %q %v", p, ok)
	}
	if _, ok := signers.Principal(b, "replayctl-policy", time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC)); ok {
		t.Error("bob's key counted after valid-before")
	}
	for _, bad := range []string{"*@example.com " + sshsig.AuthorizedKey(a), "alice cert-authority " + sshsig.AuthorizedKey(a), "alice ssh-ed25519 AAAAnotbase64", "alice"} {
		if _, err := sshsig.ParseAllowedSigners([]byte("# x\n" + bad + "\n")); !errors.Is(err, sshsig.ErrBadSignersFile) || !strings.Contains(err.Error(), "line 2") {
			t.Errorf("%q: %v; want a refusal naming line 2", bad, err)
		}
	}
}
