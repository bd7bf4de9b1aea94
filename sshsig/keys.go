package sshsig

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

// LoadSigner returns a signer for the key at path: a private key file without a passphrase, or
// (for a passphrase-protected key, or its .pub file) the same key held by the ssh-agent at
// SSH_AUTH_SOCK, as git's SSH signing does. replayctl never asks for a passphrase.
func LoadSigner(path string) (ssh.Signer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read signing key: %w", err)
	}
	signer, err := ssh.ParsePrivateKey(data)
	if err == nil {
		return signer, nil
	}
	var pub ssh.PublicKey
	if pm, ok := errors.AsType[*ssh.PassphraseMissingError](err); ok && pm.PublicKey != nil {
		pub = pm.PublicKey
	} else if k, _, _, _, perr := ssh.ParseAuthorizedKey(data); perr == nil {
		pub = k
	} else {
		return nil, fmt.Errorf("read signing key %s: %v (want an OpenSSH private key, or a .pub whose key ssh-agent holds)", path, err)
	}
	return agentSigner(pub, path)
}

func agentSigner(pub ssh.PublicKey, path string) (ssh.Signer, error) {
	sock := os.Getenv("SSH_AUTH_SOCK")
	if sock == "" {
		return nil, fmt.Errorf("signing key %s has a passphrase (or is a public key) and no ssh-agent is running (SSH_AUTH_SOCK is empty): "+
			"`ssh-add` it, or sign the statement elsewhere and pass --signature", path)
	}
	conn, err := net.Dial("unix", sock)
	if err != nil {
		return nil, fmt.Errorf("reach ssh-agent at %s: %w", sock, err)
	}
	signers, err := agent.NewClient(conn).Signers()
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("list ssh-agent's keys: %w", err)
	}
	want := pub.Marshal()
	for _, s := range signers {
		if bytes.Equal(s.PublicKey().Marshal(), want) {
			return s, nil
		}
	}
	conn.Close()
	return nil, fmt.Errorf("ssh-agent does not hold key %s (%s): `ssh-add %s` first", ssh.FingerprintSHA256(pub), path, path)
}
