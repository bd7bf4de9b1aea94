// Package natsurl hides the passwords and tokens of NATS server URLs in what replayctl and its
// examples print. It is the one place that knows where nats.go finds credentials in a server list.
package natsurl

import (
	"errors"
	"net/url"
	"regexp"
	"strings"
)

// Redacted is what stands in for a secret in every message.
const Redacted = "xxxxx"

const redacted = Redacted

// Redact returns servers, a server list as nats.Connect takes it ("nats://u:p@a:4222,b:4222"),
// with every password and token replaced by "xxxxx" and everything else as written.
func Redact(servers string) string {
	var b strings.Builder
	last := 0
	for _, c := range credentials(servers) {
		b.WriteString(servers[last:c.start])
		b.WriteString(redacted)
		last = c.end
	}
	b.WriteString(servers[last:])
	return b.String()
}

// Scrub returns text with every password and token of servers removed, as written and
// percent-decoded, wherever it appears: a library's error may quote one entry of the list, with
// a scheme nats.go added ("parse \"nats://u:p w@h\": net/url: invalid userinfo").
func Scrub(text, servers string) string {
	for _, c := range credentials(servers) {
		for _, secret := range c.forms {
			text = strings.ReplaceAll(text, secret, redacted)
		}
	}
	return text
}

// ScrubError returns err with Scrub applied to its message, keeping its chain for errors.Is.
func ScrubError(err error, servers string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if scrubbed := Scrub(msg, servers); scrubbed != msg {
		return &scrubbedError{msg: scrubbed, err: err}
	}
	return err
}

type scrubbedError struct {
	msg string
	err error
}

func (e *scrubbedError) Error() string { return e.msg }

func (e *scrubbedError) Unwrap() error { return e.err }

// tokenInText matches the lone user part of a NATS URL in free text, which is how NATS carries
// a token. Quotes and backquotes end a URL quoted in a message.
var tokenInText = regexp.MustCompile("(?i)\\b((?:nats|tls|ws|wss)://)[^\\s:/@\"'`]+@")

// RedactTokens masks the token of every NATS URL written with a scheme in free text, for URLs
// that are not the configured server list (an operator's misplaced argument).
func RedactTokens(text string) string {
	return tokenInText.ReplaceAllString(text, "${1}"+redacted+"@")
}

// nkeySeed matches an NKey seed (S, its type, base32 of 36 bytes: 58 characters in all, as in a
// creds or .nk file) and jwt a JSON Web Token (a creds file's user JWT), wherever they appear.
var (
	nkeySeed = regexp.MustCompile(`\bS[UAONCXP][A-Z2-7]{56}\b`)
	jwt      = regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]+`)
)

// RedactKeys masks every NKey seed and JWT in text: a creds or nkey file's contents must never
// be shown, whichever library quoted them.
func RedactKeys(text string) string {
	return jwt.ReplaceAllString(nkeySeed.ReplaceAllString(text, redacted), redacted)
}

// credential is the byte range [start, end) of one password or token in a server list, and the
// forms it may take in a message.
type credential struct {
	start, end int
	forms      []string
}

var errNoCredential = errors.New("no credential")

// credentials finds the password (user:password@) or token (a lone user part) of every entry of
// servers, read as nats.go reads them: the list is split at commas and each entry trimmed; an
// entry without "://" gets nats://; url.Parse then takes the userinfo as what comes before the last
// '@' of the authority, which ends at the first '/', '?' or '#'. An entry url.Parse would refuse
// (a space in the password, a '/' in it that ends the authority early) is read the same way as
// far as it goes and hides up to its last '@': that hides too much rather than leak.
func credentials(servers string) []credential {
	var found []credential
	offset := 0
	for _, entry := range strings.Split(servers, ",") {
		if c, err := entryCredential(entry); err == nil {
			c.start += offset
			c.end += offset
			found = append(found, c)
		}
		offset += len(entry) + 1
	}
	return found
}

// entryCredential returns the credential of one entry, its range relative to the entry.
func entryCredential(entry string) (credential, error) {
	trimmed := strings.TrimSpace(entry)
	lead := strings.Index(entry, trimmed)
	authority := 0
	if i := strings.Index(trimmed, "://"); i >= 0 && isScheme(trimmed[:i]) {
		authority = i + len("://")
	}
	rest := trimmed[authority:]
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	at := strings.LastIndexByte(rest[:end], '@')
	if at < 0 {
		at = strings.LastIndexByte(rest, '@')
	}
	if at < 0 {
		return credential{}, errNoCredential
	}
	userinfo := rest[:at]
	secretStart := 0
	if colon := strings.IndexByte(userinfo, ':'); colon >= 0 {
		secretStart = colon + 1
	}
	raw := userinfo[secretStart:]
	if raw == "" {
		return credential{}, errNoCredential
	}
	c := credential{start: lead + authority + secretStart, end: lead + authority + at, forms: []string{raw}}
	if decoded, err := url.PathUnescape(raw); err == nil && decoded != raw {
		c.forms = append(c.forms, decoded)
	}
	return c, nil
}

// isScheme reports whether s is a URL scheme: a letter, then letters, digits, '+', '-' or '.'.
func isScheme(s string) bool {
	for i, r := range s {
		letter := 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z'
		if !letter && (i == 0 || !('0' <= r && r <= '9' || r == '+' || r == '-' || r == '.')) {
			return false
		}
	}
	return s != ""
}
