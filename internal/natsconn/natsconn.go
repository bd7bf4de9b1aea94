// Package natsconn turns NATS connection settings given the natscli way (flags, the NATS_*
// environment variables, a natscli context) into one connection, for replayctl and the example
// consumer alike. It never prints: it returns settings, connections and typed errors whose
// messages name the server and where each credential came from, never a secret.
package natsconn

import (
	"errors"
	"fmt"
	"strings"

	"github.com/replayctl/replayctl/fault"
)

var (
	// ErrSettings means the settings cannot be used as given: an unknown or unreadable context,
	// two kinds of credentials at once, a field this package does not support. Retrying unchanged
	// cannot succeed.
	ErrSettings = fault.New(fault.Invalid, "NATS connection settings")
	// ErrRefused means the server refused the credentials, or the TLS handshake failed (an
	// unknown certificate authority, a server that requires TLS or a client certificate).
	// Retrying unchanged cannot succeed.
	ErrRefused = fault.New(fault.Invalid, "NATS refused the connection")
)

// kindError is an error that matches kind (ErrSettings, ErrRefused) with errors.Is and reads as
// its message alone: the message already says what kind of failure it is.
type kindError struct {
	kind error
	msg  string
	err  error
}

func (e *kindError) Error() string { return e.msg }

func (e *kindError) Is(target error) bool { return target == e.kind }

// Kind is fault.Invalid: settings that cannot work, or credentials the server refused, fail the
// same way on every retry.
func (e *kindError) Kind() fault.Kind { return fault.Invalid }

func (e *kindError) Unwrap() error { return e.err }

// settingsErrorf is fmt.Errorf for an ErrSettings.
func settingsErrorf(format string, args ...any) error {
	err := fmt.Errorf(format, args...)
	return &kindError{kind: ErrSettings, msg: err.Error(), err: errors.Unwrap(err)}
}

// refusedErrorf is fmt.Errorf for an ErrRefused.
func refusedErrorf(format string, args ...any) error {
	err := fmt.Errorf(format, args...)
	return &kindError{kind: ErrRefused, msg: err.Error(), err: errors.Unwrap(err)}
}

// Flags are the connection settings given on a command line; an empty field was not given.
type Flags struct {
	URL, Context           string
	User, Password, Token  string
	Creds, NKey            string
	TLSCert, TLSKey, TLSCA string
}

// FlagSpec is one connection flag: its name (without dashes), its help text and where its value
// goes, so cobra and the standard flag package bind the same flags.
type FlagSpec struct {
	Name, Usage string
	Value       *string
}

// Specs lists f's flags with natscli's names (but --nats-url for natscli's --server) and the
// environment variable each falls back to.
func (f *Flags) Specs() []FlagSpec {
	return []FlagSpec{
		{"nats-url", "NATS server URLs, comma-separated (default: $NATS_URL, then the context's url, then " + DefaultURL + ")", &f.URL},
		{"context", "natscli context: a name under ~/.config/nats/context (or $XDG_CONFIG_HOME/nats/context), or a .json file (default: $NATS_CONTEXT, then the one 'nats context select' chose)", &f.Context},
		{"user", "NATS user; without --password it is a token, as in natscli (default: $NATS_USER, then the context's)", &f.User},
		{"password", "NATS password (default: $NATS_PASSWORD, then the context's); prefer the variable or a context: the process list shows flags", &f.Password},
		{"token", "NATS token (default: $NATS_TOKEN, then the context's)", &f.Token},
		{"creds", "NATS user credentials file (default: $NATS_CREDS, then the context's)", &f.Creds},
		{"nkey", "NATS user NKey seed file (default: $NATS_NKEY, then the context's)", &f.NKey},
		{"tlscert", "TLS client certificate file (default: $NATS_CERT, then the context's cert)", &f.TLSCert},
		{"tlskey", "TLS client private key file (default: $NATS_KEY, then the context's key)", &f.TLSKey},
		{"tlsca", "TLS certificate authority file to verify the server with (default: $NATS_CA, then the context's ca)", &f.TLSCA},
	}
}

// DefaultURL is the server used when neither a flag, the environment nor a context names one.
const DefaultURL = "nats://127.0.0.1:4222"

// setting is one resolved value and where it came from ("--user", "$NATS_USER", `context "prod"`).
type setting struct {
	value, source string
}

func (s setting) set() bool { return s.value != "" }

// Settings are resolved connection settings: what to connect to, with which credentials, and
// where each came from. Build them with Resolve.
type Settings struct {
	servers               setting
	user, password, token setting
	creds, nkey           setting
	cert, key, ca         setting
	inboxPrefix           string
	tlsFirst              bool
	context               string
	contextPath           string
	notes                 []string
}

// Servers returns the server list to connect to, credentials in it included (redact it with
// natsurl before showing it).
func (s Settings) Servers() string { return s.servers.value }

// Context returns the name of the natscli context the settings read, empty if none.
func (s Settings) Context() string { return s.context }

// Notes are things the operator should know about how the settings were resolved (an
// environment variable that overrides the context's url).
func (s Settings) Notes() []string { return s.notes }

// secrets returns every secret value the settings hold, for scrubbing messages.
func (s Settings) secrets() []string {
	var out []string
	for _, v := range []setting{s.password, s.token} {
		if v.set() {
			out = append(out, v.value)
		}
	}
	return out
}

// Auth describes the credentials and where they came from, without a secret: `user "alice"
// (--user) with a password ($NATS_PASSWORD)`, `creds /etc/nats/billing.creds (context "prod")`,
// or "no credentials".
func (s Settings) Auth() string {
	var parts []string
	if s.user.set() {
		p := fmt.Sprintf("user %q (%s)", s.user.value, s.user.source)
		if s.password.set() {
			p += fmt.Sprintf(" with a password (%s)", s.password.source)
		}
		parts = append(parts, p)
	}
	if s.token.set() {
		note := ""
		if s.token.source == "--user" || s.token.source == "$NATS_USER" {
			note = ": a user without a password is a token, as in natscli"
		}
		parts = append(parts, fmt.Sprintf("a token (%s%s)", s.token.source, note))
	}
	if s.creds.set() {
		parts = append(parts, fmt.Sprintf("creds %s (%s)", s.creds.value, s.creds.source))
	}
	if s.nkey.set() {
		parts = append(parts, fmt.Sprintf("nkey %s (%s)", s.nkey.value, s.nkey.source))
	}
	if s.cert.set() {
		parts = append(parts, fmt.Sprintf("client certificate %s (%s)", s.cert.value, s.cert.source))
	}
	if s.ca.set() {
		parts = append(parts, fmt.Sprintf("CA %s (%s)", s.ca.value, s.ca.source))
	}
	if len(parts) == 0 {
		return "no credentials"
	}
	return strings.Join(parts, ", ")
}
