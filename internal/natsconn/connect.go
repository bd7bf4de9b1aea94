package natsconn

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/replayctl/replayctl/internal/natsurl"
)

// Options returns the nats.go options that carry s's credentials and TLS settings.
func (s Settings) Options() ([]nats.Option, error) {
	var opts []nats.Option
	switch {
	case s.user.set():
		opts = append(opts, nats.UserInfo(s.user.value, s.password.value))
	case s.token.set():
		opts = append(opts, nats.Token(s.token.value))
	case s.creds.set():
		opts = append(opts, nats.UserCredentials(s.creds.value))
	case s.nkey.set():
		opt, err := nats.NkeyOptionFromSeed(s.nkey.value)
		if err != nil {
			// nats.go names the file's problem, never the seed.
			return nil, settingsErrorf("the nkey %s (%s): %w", s.nkey.value, s.nkey.source, err)
		}
		opts = append(opts, opt)
	}
	if s.cert.set() {
		opts = append(opts, nats.ClientCert(s.cert.value, s.key.value))
	}
	if s.ca.set() {
		opts = append(opts, nats.RootCAs(s.ca.value))
	}
	if s.inboxPrefix != "" {
		opts = append(opts, nats.CustomInboxPrefix(s.inboxPrefix))
	}
	if s.tlsFirst {
		opts = append(opts, nats.TLSHandshakeFirst())
	}
	return opts, nil
}

// Connect connects to s's servers as name within timeout, with extra options after s's. Its
// errors name the servers (redacted) and the credentials' sources, never a secret; a refusal
// of the credentials or of the TLS handshake matches ErrRefused.
func Connect(s Settings, name string, timeout time.Duration, extra ...nats.Option) (*nats.Conn, error) {
	opts, err := s.Options()
	if err != nil {
		return nil, err
	}
	opts = append(append(opts, nats.Name(name), nats.Timeout(timeout)), extra...)
	nc, err := nats.Connect(s.servers.value, opts...)
	if err != nil {
		return nil, s.connectError(err)
	}
	return nc, nil
}

// connectError explains a failed connect: refused credentials and TLS failures by what was
// presented and from where; anything else (unreachable, timeout) as it came.
func (s Settings) connectError(err error) error {
	where := natsurl.Redact(s.servers.value)
	scrubbed := scrubError(err, s)
	switch {
	case refusedCredentials(err):
		return refusedErrorf("NATS at %s refused the credentials, %s: %w; check them (--user/--password, --token, --creds, "+
			"--nkey, the NATS_* variables%s)", where, s.Auth(), scrubbed, s.contextHint())
	case tlsFailure(err):
		return refusedErrorf("TLS with NATS at %s failed (%s): %w; check --tlsca, --tlscert/--tlskey, the NATS_CA, "+
			"NATS_CERT and NATS_KEY variables%s, and that the URL names the host the server's certificate is for", where, s.Auth(), scrubbed, s.contextHint())
	}
	return fmt.Errorf("connecting to NATS at %s: %w; check --nats-url / NATS_URL%s", where, scrubbed, s.contextHint())
}

func (s Settings) contextHint() string {
	if s.context == "" {
		return ""
	}
	return fmt.Sprintf(" or the NATS context %q (%s)", s.context, s.contextPath)
}

// refusedCredentials reports whether the server turned the credentials down.
func refusedCredentials(err error) bool {
	for _, refused := range []error{nats.ErrAuthorization, nats.ErrAuthExpired, nats.ErrAuthRevoked, nats.ErrAccountAuthExpired, nats.ErrNkeysNotSupported} {
		if errors.Is(err, refused) {
			return true
		}
	}
	return false
}

// tlsFailure reports whether the TLS handshake or its negotiation failed: nothing about the
// network, so retrying cannot help.
func tlsFailure(err error) bool {
	var (
		unknownAuthority x509.UnknownAuthorityError
		invalid          x509.CertificateInvalidError
		hostname         x509.HostnameError
		verification     *tls.CertificateVerificationError
		opError          *net.OpError
	)
	return errors.As(err, &unknownAuthority) || errors.As(err, &invalid) || errors.As(err, &hostname) ||
		errors.As(err, &verification) ||
		// crypto/tls reports the peer's alert (certificate required, bad certificate) this way.
		errors.As(err, &opError) && opError.Op == "remote error" ||
		// ErrTLS: the server closed the connection after the handshake, which is how it turns
		// down a client without the certificate it requires.
		errors.Is(err, nats.ErrTLS) || errors.Is(err, nats.ErrSecureConnRequired) || errors.Is(err, nats.ErrSecureConnWanted) ||
		errors.Is(err, nats.ErrClientCertOrRootCAsRequired)
}
