// Package sshsig makes and checks OpenSSH's SSHSIG signatures (PROTOCOL.sshsig), the format of
// `ssh-keygen -Y sign` and git's SSH commit signing, and reads OpenSSH's allowed_signers files. It
// lets operators sign replayctl decisions with the SSH keys they already have, and verifies in
// process: ssh-keygen is never on the verify path.
package sshsig

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"hash"
	"strings"

	"golang.org/x/crypto/ssh"
)

const (
	magic   = "SSHSIG"
	version = 1
	// pemType is the armour ssh-keygen writes.
	pemType = "SSH SIGNATURE"
)

// ErrBadSignature means a signature does not verify: malformed, for another namespace, or not
// over the message.
var ErrBadSignature = errors.New("the SSH signature does not verify")

// wrapper is the signature blob's fields after the magic preamble.
type wrapper struct {
	Version   uint32
	PublicKey []byte
	Namespace string
	Reserved  string
	HashAlg   string
	Signature []byte
}

// signedData is what the key signs: the preamble, the namespace and the message's hash.
type signedData struct {
	Namespace string
	Reserved  string
	HashAlg   string
	Hash      []byte
}

func digest(alg string, message []byte) ([]byte, error) {
	var h hash.Hash
	switch alg {
	case "sha512":
		h = sha512.New()
	case "sha256":
		h = sha256.New()
	default:
		return nil, fmt.Errorf("%w: hash algorithm %q (want sha512 or sha256)", ErrBadSignature, alg)
	}
	h.Write(message)
	return h.Sum(nil), nil
}

func toSign(namespace, hashAlg string, message []byte) ([]byte, error) {
	d, err := digest(hashAlg, message)
	if err != nil {
		return nil, err
	}
	return append([]byte(magic), ssh.Marshal(signedData{Namespace: namespace, HashAlg: hashAlg, Hash: d})...), nil
}

// Sign signs message for namespace with signer, as `ssh-keygen -Y sign -n namespace` does (SHA-512;
// RSA keys sign with rsa-sha2-512), and returns the armoured signature.
func Sign(signer ssh.Signer, namespace string, message []byte) ([]byte, error) {
	if namespace == "" {
		return nil, errors.New("sign: an SSH signature needs a namespace")
	}
	data, err := toSign(namespace, "sha512", message)
	if err != nil {
		return nil, err
	}
	var sig *ssh.Signature
	if as, ok := signer.(ssh.AlgorithmSigner); ok && signer.PublicKey().Type() == ssh.KeyAlgoRSA {
		sig, err = as.SignWithAlgorithm(rand.Reader, data, ssh.KeyAlgoRSASHA512)
	} else {
		sig, err = signer.Sign(rand.Reader, data)
	}
	if err != nil {
		return nil, fmt.Errorf("sign with %s key %s: %w", signer.PublicKey().Type(), ssh.FingerprintSHA256(signer.PublicKey()), err)
	}
	blob := append([]byte(magic), ssh.Marshal(wrapper{Version: version, PublicKey: signer.PublicKey().Marshal(),
		Namespace: namespace, HashAlg: "sha512", Signature: ssh.Marshal(sig)})...)
	return armour(blob), nil
}

// armour wraps blob as ssh-keygen does: PEM-style lines of 70 characters.
func armour(blob []byte) []byte {
	enc := base64.StdEncoding.EncodeToString(blob)
	var b bytes.Buffer
	b.WriteString("-----BEGIN " + pemType + "-----\n")
	for len(enc) > 70 {
		b.WriteString(enc[:70] + "\n")
		enc = enc[70:]
	}
	b.WriteString(enc + "\n-----END " + pemType + "-----\n")
	return b.Bytes()
}

// Verify checks the armoured signature over message for namespace and returns the key that made
// it. Who that key belongs to is the caller's question (AllowedSigners).
func Verify(armoured []byte, namespace string, message []byte) (ssh.PublicKey, error) {
	block, _ := pem.Decode(bytes.TrimSpace(armoured))
	if block == nil || block.Type != pemType {
		return nil, fmt.Errorf("%w: not an armoured SSH signature (-----BEGIN %s-----)", ErrBadSignature, pemType)
	}
	blob, ok := bytes.CutPrefix(block.Bytes, []byte(magic))
	if !ok {
		return nil, fmt.Errorf("%w: no %s preamble", ErrBadSignature, magic)
	}
	var w wrapper
	if err := ssh.Unmarshal(blob, &w); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadSignature, err)
	}
	if w.Version != version {
		return nil, fmt.Errorf("%w: version %d (want %d)", ErrBadSignature, w.Version, version)
	}
	if w.Namespace != namespace {
		return nil, fmt.Errorf("%w: made for namespace %q, not %q: a signature is only good for what it was made for", ErrBadSignature, w.Namespace, namespace)
	}
	pub, err := ssh.ParsePublicKey(w.PublicKey)
	if err != nil {
		return nil, fmt.Errorf("%w: its public key: %v", ErrBadSignature, err)
	}
	if _, isCert := pub.(*ssh.Certificate); isCert {
		return nil, fmt.Errorf("%w: signed with a certificate; replayctl verifies plain keys listed in allowed_signers", ErrBadSignature)
	}
	var sig ssh.Signature
	if err := ssh.Unmarshal(w.Signature, &sig); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadSignature, err)
	}
	if sig.Format == ssh.KeyAlgoRSA {
		return nil, fmt.Errorf("%w: an RSA signature with SHA-1 (ssh-rsa), which OpenSSH refuses too", ErrBadSignature)
	}
	data, err := toSign(namespace, w.HashAlg, message)
	if err != nil {
		return nil, err
	}
	if err := pub.Verify(data, &sig); err != nil {
		return nil, fmt.Errorf("%w: not made over this statement by key %s", ErrBadSignature, ssh.FingerprintSHA256(pub))
	}
	return pub, nil
}

// AuthorizedKey renders key as one authorized_keys line without a comment.
func AuthorizedKey(key ssh.PublicKey) string {
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(key)))
}
