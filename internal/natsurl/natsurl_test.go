package natsurl_test

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/replayctl/replayctl/internal/natsurl"
)

const secret = "S3cr3tPW"

// forms are the ways an operator can give a NATS password or token, each as typed and redacted.
var forms = []struct{ name, servers, want string }{
	{"user and password", "nats://alice:" + secret + "@127.0.0.1:1", "nats://alice:xxxxx@127.0.0.1:1"},
	{"token", "nats://" + secret + "@127.0.0.1:1", "nats://xxxxx@127.0.0.1:1"},
	{"no scheme, user and password", "natsuser:" + secret + "@127.0.0.1:1", "natsuser:xxxxx@127.0.0.1:1"},
	{"no scheme, token", secret + "@127.0.0.1:1", "xxxxx@127.0.0.1:1"},
	{"second entry", "nats://127.0.0.1:2,nats://alice:" + secret + "@127.0.0.1:1", "nats://127.0.0.1:2,nats://alice:xxxxx@127.0.0.1:1"},
	{"second entry, no scheme, after a space", "nats://127.0.0.1:2, natsuser:" + secret + "@127.0.0.1:1", "nats://127.0.0.1:2, natsuser:xxxxx@127.0.0.1:1"},
	{"second entry token", "127.0.0.1:2," + secret + "@127.0.0.1:1", "127.0.0.1:2,xxxxx@127.0.0.1:1"},
	{"both entries", "tls://bob:" + secret + "@a:4222,tls://" + secret + "@b:80", "tls://bob:xxxxx@a:4222,tls://xxxxx@b:80"},
	{"space in the password (unparseable)", "natsuser:pa ss" + secret + "@127.0.0.1:1", "natsuser:xxxxx@127.0.0.1:1"},
	{"percent-encoded", "nats://alice:S3cr%33tPW@127.0.0.1:1", "nats://alice:xxxxx@127.0.0.1:1"},
	{"'@' in the password", "nats://alice:p@" + secret + "@127.0.0.1:1", "nats://alice:xxxxx@127.0.0.1:1"},
	{"'/' in the password", "nats://alice:ab/" + secret + "@127.0.0.1:1", "nats://alice:xxxxx@127.0.0.1:1"},
	{"'?' in the password", "alice:ab?" + secret + "@127.0.0.1:1", "alice:xxxxx@127.0.0.1:1"},
	{"':' before '://' in the password", "natsuser:ab://" + secret + "@127.0.0.1:1", "natsuser:xxxxx@127.0.0.1:1"},
	{"first of two entries", "nats://u:" + secret + "@a:4222,nats://b:4222", "nats://u:xxxxx@a:4222,nats://b:4222"},
	{"no credentials", "nats://127.0.0.1:4222, localhost:4223", "nats://127.0.0.1:4222, localhost:4223"},
	{"empty password", "nats://alice:@127.0.0.1:1", "nats://alice:@127.0.0.1:1"},
}

func TestRedact(t *testing.T) {
	for _, f := range forms {
		t.Run(f.name, func(t *testing.T) {
			if got := natsurl.Redact(f.servers); got != f.want {
				t.Errorf("Redact(%q) = %q, want %q", f.servers, got, f.want)
			}
		})
	}
}

// TestScrubHidesWhatNATSQuotes connects to each form for real (nothing listens on port 1) and
// checks nats.go's own error, which may quote an entry with the scheme it added, keeps no secret.
func TestScrubHidesWhatNATSQuotes(t *testing.T) {
	for _, f := range forms {
		t.Run(f.name, func(t *testing.T) {
			nc, err := nats.Connect(f.servers, nats.Timeout(200*1e6), nats.DontRandomize())
			if err == nil {
				nc.Close()
				t.Skip("connected")
			}
			msg := fmt.Sprintf("connecting to NATS at %s: %v", f.servers, err)
			wrapped := fmt.Errorf("wrapped: %w", err)
			scrubbed := natsurl.ScrubError(wrapped, f.servers)
			if !errors.Is(scrubbed, err) {
				t.Errorf("ScrubError lost the error chain")
			}
			text := natsurl.Scrub(msg, f.servers)
			for _, text := range []string{text, scrubbed.Error()} {
				if strings.Contains(text, secret) || strings.Contains(text, "S3cr%33tPW") {
					t.Errorf("scrubbed message still holds the secret: %s", text)
				}
			}
			if strings.Contains(f.want, "xxxxx") && !strings.Contains(text, "xxxxx") {
				t.Errorf("scrubbed message does not show where the secret was: %s", text)
			}
		})
	}
}

// TestScrubHidesTheDecodedPassword: nats.go sends the password percent-decoded, and a library
// may quote it so.
func TestScrubHidesTheDecodedPassword(t *testing.T) {
	servers := "nats://alice:" + url.PathEscape("S3cr") + "%33tPW@127.0.0.1:1"
	if got := natsurl.Scrub("auth failed for "+secret, servers); got != "auth failed for xxxxx" {
		t.Errorf("Scrub = %q", got)
	}
}

func TestRedactTokens(t *testing.T) {
	in := "unknown job \"nats://" + secret + "@h:4222\" or `tls://" + secret + "@h`; nats://h:4222 stays"
	want := "unknown job \"nats://xxxxx@h:4222\" or `tls://xxxxx@h`; nats://h:4222 stays"
	if got := natsurl.RedactTokens(in); got != want {
		t.Errorf("RedactTokens = %q, want %q", got, want)
	}
}

func TestRedactKeysHidesSeedsAndJWTsButNotJobIDsOrDigests(t *testing.T) {
	user, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	seed, _ := user.Seed()
	account, _ := nkeys.CreateAccount()
	accountSeed, _ := account.Seed()
	pub, _ := user.PublicKey()
	const jwt = "eyJ0eXAiOiJKV1QiLCJhbGciOiJlZDI1NTE5LW5rZXkifQ.eyJqdGkiOiJBQkMifQ.c2ln"
	kept := "job job-20261204T053424Z-4097c2, digest sha256:f3d69268d396a0bd306a14b843bfaf3520d0a318fb77067fcc11de006359293d, user " + pub
	got := natsurl.RedactKeys("no job " + string(seed) + " or " + string(accountSeed) + "; jwt " + jwt + "; " + kept)
	if want := "no job xxxxx or xxxxx; jwt xxxxx; " + kept; got != want {
		t.Fatalf("RedactKeys\n got %s\nwant %s", got, want)
	}
}
