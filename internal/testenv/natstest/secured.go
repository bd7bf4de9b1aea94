package natstest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// StartSecured runs a server for t on a random loopback port with the authentication or TLS opts
// sets (Username/Password, Authorization, Nkeys, TLSConfig…), JetStream on, stopped at cleanup,
// and returns its client URL. Tests connect to it with their own credentials.
func StartSecured(t testing.TB, opts *server.Options) string {
	t.Helper()
	o := *opts
	o.Host, o.Port, o.NoLog, o.NoSigs = "127.0.0.1", -1, true, true
	o.JetStream, o.StoreDir = true, t.TempDir()
	srv := startServer(t, &o)
	t.Cleanup(srv.Stop)
	return srv.ClientURL()
}

// TLSFiles are the PEM files of a throwaway certificate authority and of a server and a client
// certificate it signed, the server's for 127.0.0.1.
type TLSFiles struct {
	CA, ServerCert, ServerKey, ClientCert, ClientKey string
}

// WriteTLSFiles makes a fresh CA, server and client certificate in t's temporary directory.
func WriteTLSFiles(t testing.TB) TLSFiles {
	t.Helper()
	dir := t.TempDir()
	caKey := newKey(t)
	caTemplate := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "replayctl test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTemplate, caTemplate, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	files := TLSFiles{CA: filepath.Join(dir, "ca.pem")}
	writePEM(t, files.CA, "CERTIFICATE", caDER)
	issue := func(serial int64, name string, usage x509.ExtKeyUsage, ips []net.IP) (certFile, keyFile string) {
		key := newKey(t)
		der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage}, IPAddresses: ips,
		}, ca, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		keyDER, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		certFile, keyFile = filepath.Join(dir, name+".pem"), filepath.Join(dir, name+"-key.pem")
		writePEM(t, certFile, "CERTIFICATE", der)
		writePEM(t, keyFile, "EC PRIVATE KEY", keyDER)
		return certFile, keyFile
	}
	files.ServerCert, files.ServerKey = issue(2, "server", x509.ExtKeyUsageServerAuth, []net.IP{net.IPv4(127, 0, 0, 1)})
	files.ClientCert, files.ClientKey = issue(3, "client", x509.ExtKeyUsageClientAuth, nil)
	return files
}

// ServerTLS returns server options that require TLS with f's server certificate and, with
// verify, a client certificate signed by f's CA.
func (f TLSFiles) ServerTLS(t testing.TB, verify bool) *server.Options {
	t.Helper()
	cfg, err := server.GenTLSConfig(&server.TLSConfigOpts{CertFile: f.ServerCert, KeyFile: f.ServerKey, CaFile: f.CA, Verify: verify})
	if err != nil {
		t.Fatal(err)
	}
	return &server.Options{TLS: true, TLSVerify: verify, TLSConfig: cfg, TLSTimeout: 2}
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func writePEM(t testing.TB, path, kind string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}
