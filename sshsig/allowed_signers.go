package sshsig

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"
)

// Signer is one line of an allowed_signers file (ssh-keygen(1), "ALLOWED SIGNERS"): the
// principals a key speaks for, in which namespaces, and when.
type Signer struct {
	Principals []string
	// Namespaces limits the key to these signature namespaces; empty means any.
	Namespaces []string
	Key        ssh.PublicKey
	// ValidAfter and ValidBefore bound when a signature by the key counts; zero means unbounded.
	ValidAfter, ValidBefore time.Time
	// Line is where the signer was read, for messages.
	Line int
}

// AllowedSigners is a parsed allowed_signers file.
type AllowedSigners []Signer

// ErrBadSignersFile means an allowed_signers file cannot be read; the error names the line.
var ErrBadSignersFile = errors.New("bad allowed_signers file")

// ParseAllowedSigners reads OpenSSH's allowed_signers format: "principals [options] keytype
// base64-key [comment]" a line, # comments and blank lines skipped. Options are namespaces="...",
// valid-after="..." and valid-before="..."; cert-authority lines are refused (replayctl
// verifies plain keys), and so are principal patterns with wildcards, since an approval must
// name one person.
func ParseAllowedSigners(data []byte) (AllowedSigners, error) {
	var out AllowedSigners
	s := bufio.NewScanner(bytes.NewReader(data))
	n := 0
	for s.Scan() {
		n++
		line := strings.TrimSpace(s.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		sg, err := parseSignerLine(line)
		if err != nil {
			return nil, fmt.Errorf("%w: line %d: %v", ErrBadSignersFile, n, err)
		}
		sg.Line = n
		out = append(out, sg)
	}
	if err := s.Err(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadSignersFile, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no signer in it (a line is: principal keytype base64-key)", ErrBadSignersFile)
	}
	return out, nil
}

func parseSignerLine(line string) (Signer, error) {
	var sg Signer
	var principals, rest string
	if strings.HasPrefix(line, `"`) {
		end := strings.Index(line[1:], `"`)
		if end < 0 {
			return sg, errors.New("an unterminated quote in the principals")
		}
		principals, rest = line[1:end+1], line[end+2:]
	} else {
		var ok bool
		principals, rest, ok = strings.Cut(line, " ")
		if !ok {
			principals, rest, _ = strings.Cut(line, "\t")
		}
	}
	for _, p := range strings.Split(principals, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if strings.ContainsAny(p, "*?!") {
			return sg, fmt.Errorf("principal pattern %q: replayctl needs each key to name its people, not a pattern", p)
		}
		sg.Principals = append(sg.Principals, p)
	}
	if len(sg.Principals) == 0 {
		return sg, errors.New("no principal before the key")
	}
	key, _, options, _, err := ssh.ParseAuthorizedKey([]byte(strings.TrimSpace(rest)))
	if err != nil {
		return sg, fmt.Errorf("the key after principal %s: %v", sg.Principals[0], err)
	}
	if _, isCert := key.(*ssh.Certificate); isCert {
		return sg, errors.New("a certificate where a public key belongs")
	}
	sg.Key = key
	for _, o := range options {
		name, value, _ := strings.Cut(o, "=")
		value = strings.Trim(value, `"`)
		switch strings.ToLower(name) {
		case "namespaces":
			for _, ns := range strings.Split(value, ",") {
				if ns = strings.TrimSpace(ns); ns != "" {
					sg.Namespaces = append(sg.Namespaces, ns)
				}
			}
		case "valid-after":
			if sg.ValidAfter, err = parseValidity(value); err != nil {
				return sg, fmt.Errorf("valid-after: %v", err)
			}
		case "valid-before":
			if sg.ValidBefore, err = parseValidity(value); err != nil {
				return sg, fmt.Errorf("valid-before: %v", err)
			}
		case "cert-authority":
			return sg, errors.New("cert-authority: replayctl verifies plain keys; list each approver's key")
		default:
			return sg, fmt.Errorf("unknown option %q", name)
		}
	}
	return sg, nil
}

// parseValidity reads ssh-keygen's YYYYMMDD[HHMM[SS]][Z] (local time without Z; UTC here, since a
// server's zone is not an approver's).
func parseValidity(v string) (time.Time, error) {
	v = strings.TrimSuffix(v, "Z")
	for _, layout := range []string{"20060102150405", "200601021504", "20060102"} {
		if len(v) == len(layout) {
			return time.ParseInLocation(layout, v, time.UTC)
		}
	}
	return time.Time{}, fmt.Errorf("%q is not YYYYMMDD[HHMM[SS]][Z]", v)
}

// Principal returns the principal key speaks for in namespace at t: the first principal of the
// first line listing the key, usable in namespace and valid at t. ok is false when no line does.
func (a AllowedSigners) Principal(key ssh.PublicKey, namespace string, at time.Time) (principal string, ok bool) {
	sg, ok := a.lineOf(key, func(sg Signer) bool { return sg.allows(namespace, at) })
	return sg.principal(), ok
}

// NamedPrincipal is Principal for a line that names namespace in its namespaces option: a role
// given on purpose (a policy admin), never by a line that allows every namespace.
func (a AllowedSigners) NamedPrincipal(key ssh.PublicKey, namespace string, at time.Time) (principal string, ok bool) {
	sg, ok := a.lineOf(key, func(sg Signer) bool { return slices.Contains(sg.Namespaces, namespace) && sg.allows(namespace, at) })
	return sg.principal(), ok
}

func (sg Signer) inNamespace(namespace string) bool {
	if len(sg.Namespaces) == 0 {
		return true
	}
	for _, ns := range sg.Namespaces {
		if ns == namespace {
			return true
		}
	}
	return false
}

func (sg Signer) allows(namespace string, at time.Time) bool {
	if !sg.inNamespace(namespace) {
		return false
	}
	if !sg.ValidAfter.IsZero() && at.Before(sg.ValidAfter) {
		return false
	}
	if !sg.ValidBefore.IsZero() && !at.Before(sg.ValidBefore) {
		return false
	}
	return true
}

// PrincipalOfKey returns the first principal of the first line listing key, whatever its
// namespaces and dates: who a key belongs to, for telling a planner's key from an approver's.
func (a AllowedSigners) PrincipalOfKey(key ssh.PublicKey) (string, bool) {
	sg, ok := a.lineOf(key, func(Signer) bool { return true })
	return sg.principal(), ok
}

// Lists says whether some line lists key under principal.
func (a AllowedSigners) Lists(principal string, key ssh.PublicKey) bool {
	_, ok := a.lineOf(key, func(sg Signer) bool { return slices.Contains(sg.Principals, principal) })
	return ok
}

// lineOf is the first line listing key that also meets cond.
func (a AllowedSigners) lineOf(key ssh.PublicKey, cond func(Signer) bool) (Signer, bool) {
	want := key.Marshal()
	for _, sg := range a {
		if bytes.Equal(sg.Key.Marshal(), want) && cond(sg) {
			return sg, true
		}
	}
	return Signer{}, false
}

// principal is the name a line gives its key: its first principal.
func (sg Signer) principal() string {
	if len(sg.Principals) == 0 {
		return ""
	}
	return sg.Principals[0]
}
