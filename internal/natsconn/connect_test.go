package natsconn

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"

	"github.com/replayctl/replayctl/internal/testenv/natstest"
)

// connect resolves flags in getenv and connects, closing the connection at cleanup.
func connect(t *testing.T, flags Flags, getenv func(string) string) error {
	t.Helper()
	s, err := Resolve(flags, getenv)
	if err != nil {
		t.Fatal(err)
	}
	nc, err := Connect(s, "natsconn-test", 5*time.Second)
	if err == nil {
		t.Cleanup(nc.Close)
	}
	return err
}

// assertRefused checks err is a refusal naming the server and where the credentials came from,
// without the secret.
func assertRefused(t *testing.T, err error, url string, says ...string) {
	t.Helper()
	if !errors.Is(err, ErrRefused) {
		t.Fatalf("error %v, want ErrRefused", err)
	}
	for _, want := range append([]string{url}, says...) {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal does not say %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), secret) {
		t.Errorf("the refusal quotes the secret:\n%v", err)
	}
}

func TestConnectWithUserAndPassword(t *testing.T) {
	url := natstest.StartSecured(t, &server.Options{Username: "billing", Password: secret})
	getenv := fakeEnv(t, map[string]string{"NATS_PASSWORD": secret})
	if err := connect(t, Flags{URL: url, User: "billing"}, getenv); err != nil {
		t.Fatal(err)
	}
	err := connect(t, Flags{URL: url, User: "billing", Password: "wrong-" + secret}, getenv)
	assertRefused(t, err, url, `refused the credentials, user "billing" (--user) with a password (--password)`, "Authorization Violation")
}

func TestConnectWithAToken(t *testing.T) {
	url := natstest.StartSecured(t, &server.Options{Authorization: secret})
	getenv := fakeEnv(t, map[string]string{"NATS_TOKEN": secret})
	if err := connect(t, Flags{URL: url}, getenv); err != nil {
		t.Fatal(err)
	}
	assertRefused(t, connect(t, Flags{URL: url}, fakeEnv(t, map[string]string{"NATS_TOKEN": secret + "x"})), url, "a token ($NATS_TOKEN)")
	// Without credentials at all the server says so the same way.
	assertRefused(t, connect(t, Flags{URL: url}, fakeEnv(t, nil)), url, "no credentials")
}

func TestConnectWithAnNKeyFromAContext(t *testing.T) {
	user, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := user.PublicKey()
	seed, _ := user.Seed()
	seedFile := filepath.Join(t.TempDir(), "billing.nk")
	if err := os.WriteFile(seedFile, seed, 0o600); err != nil {
		t.Fatal(err)
	}
	url := natstest.StartSecured(t, &server.Options{Nkeys: []*server.NkeyUser{{Nkey: pub}}})
	getenv := fakeEnv(t, nil)
	writeContext(t, getenv, "billing", `{"url": "`+url+`", "nkey": "`+seedFile+`"}`, true)
	if err := connect(t, Flags{}, getenv); err != nil {
		t.Fatal(err)
	}

	other, _ := nkeys.CreateUser()
	otherSeed, _ := other.Seed()
	otherFile := filepath.Join(t.TempDir(), "other.nk")
	if err := os.WriteFile(otherFile, otherSeed, 0o600); err != nil {
		t.Fatal(err)
	}
	err = connect(t, Flags{NKey: otherFile}, getenv)
	assertRefused(t, err, url, "nkey "+otherFile+" (--nkey)", `or the NATS context "billing"`)
	if strings.Contains(err.Error(), string(otherSeed)) {
		t.Fatalf("the refusal quotes the seed: %v", err)
	}
}

func TestConnectWithTLS(t *testing.T) {
	files := natstest.WriteTLSFiles(t)
	url := natstest.StartSecured(t, files.ServerTLS(t, true))
	getenv := fakeEnv(t, map[string]string{"NATS_CERT": files.ClientCert, "NATS_KEY": files.ClientKey})
	if err := connect(t, Flags{URL: url, TLSCA: files.CA}, getenv); err != nil {
		t.Fatal(err)
	}
	// The server's certificate is not signed by an authority the client knows.
	assertRefused(t, connect(t, Flags{URL: url}, getenv), url, "TLS with NATS at", "check --tlsca")
	// The server wants a client certificate.
	assertRefused(t, connect(t, Flags{URL: url, TLSCA: files.CA}, fakeEnv(t, nil)), url, "TLS with NATS at")
}

func TestConnectToNoServerIsNotARefusal(t *testing.T) {
	err := connect(t, Flags{URL: "nats://billing:" + secret + "@127.0.0.1:1"}, fakeEnv(t, nil))
	if err == nil || errors.Is(err, ErrRefused) || errors.Is(err, ErrSettings) {
		t.Fatalf("error %v, want a plain connection failure (retrying may succeed)", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "nats://billing:xxxxx@127.0.0.1:1") || strings.Contains(msg, secret) ||
		!strings.Contains(msg, "check --nats-url / NATS_URL") {
		t.Fatalf("error %q", msg)
	}
}

func TestScrubHidesPasswordsTokensSeedsAndJWTs(t *testing.T) {
	user, _ := nkeys.CreateUser()
	seed, _ := user.Seed()
	const jwt = "eyJ0eXAiOiJKV1QiLCJhbGciOiJlZDI1NTE5LW5rZXkifQ.eyJqdGkiOiJBQkNERUZHSElKIn0.c2lnbmF0dXJlLWJ5dGVz"
	s, err := Resolve(Flags{URL: "nats://alice:url-" + secret + "@a:4222", User: "alice", Password: secret}, fakeEnv(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	got := s.Scrub("password " + secret + ", url nats://alice:url-" + secret + "@a:4222, seed " + string(seed) + ", jwt " + jwt)
	want := "password xxxxx, url nats://alice:xxxxx@a:4222, seed xxxxx, jwt xxxxx"
	if got != want {
		t.Fatalf("scrubbed\n got %s\nwant %s", got, want)
	}
}

// TestConnectWithCreds runs a server in operator mode (an operator, an account, a user signed by
// it) and connects with the user's creds file, as `nsc generate creds` writes it; another user's
// creds, unknown to the account, are refused without their contents shown.
func TestConnectWithCreds(t *testing.T) {
	operator, _ := nkeys.CreateOperator()
	operatorPub, _ := operator.PublicKey()
	operatorJWT, err := jwt.NewOperatorClaims(operatorPub).Encode(operator)
	if err != nil {
		t.Fatal(err)
	}
	operatorClaims, err := jwt.DecodeOperatorClaims(operatorJWT)
	if err != nil {
		t.Fatal(err)
	}
	account, _ := nkeys.CreateAccount()
	accountPub, _ := account.PublicKey()
	accountJWT, err := jwt.NewAccountClaims(accountPub).Encode(operator)
	if err != nil {
		t.Fatal(err)
	}
	// JetStream in operator mode needs a system account.
	system, _ := nkeys.CreateAccount()
	systemPub, _ := system.PublicKey()
	systemJWT, err := jwt.NewAccountClaims(systemPub).Encode(operator)
	if err != nil {
		t.Fatal(err)
	}
	resolver := &server.MemAccResolver{}
	for pub, claims := range map[string]string{accountPub: accountJWT, systemPub: systemJWT} {
		if err := resolver.Store(pub, claims); err != nil {
			t.Fatal(err)
		}
	}
	writeCreds := func(name string, signer nkeys.KeyPair) (path string, contents []byte) {
		user, _ := nkeys.CreateUser()
		userPub, _ := user.PublicKey()
		userSeed, _ := user.Seed()
		userJWT, err := jwt.NewUserClaims(userPub).Encode(signer)
		if err != nil {
			t.Fatal(err)
		}
		contents, err = jwt.FormatUserConfig(userJWT, userSeed)
		if err != nil {
			t.Fatal(err)
		}
		path = filepath.Join(t.TempDir(), name+".creds")
		if err := os.WriteFile(path, contents, 0o600); err != nil {
			t.Fatal(err)
		}
		return path, contents
	}
	url := natstest.StartSecured(t, &server.Options{TrustedOperators: []*jwt.OperatorClaims{operatorClaims}, AccountResolver: resolver,
		SystemAccount: systemPub})
	good, _ := writeCreds("billing", account)
	if err := connect(t, Flags{URL: url}, fakeEnv(t, map[string]string{"NATS_CREDS": good})); err != nil {
		t.Fatal(err)
	}

	stranger, _ := nkeys.CreateAccount()
	bad, contents := writeCreds("stranger", stranger)
	err = connect(t, Flags{URL: url, Creds: bad}, fakeEnv(t, nil))
	assertRefused(t, err, url, "creds "+bad+" (--creds)")
	for _, line := range strings.Split(string(contents), "\n") {
		if len(line) > 40 && strings.Contains(err.Error(), line) {
			t.Fatalf("the refusal quotes the creds file: %v", err)
		}
	}
}
