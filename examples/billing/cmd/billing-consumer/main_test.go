package main

import (
	"strings"
	"testing"

	"github.com/replayctl/replayctl/internal/natsconn"
	"github.com/replayctl/replayctl/internal/testenv/pgtest"
)

// TestNATSPasswordNeverPrinted starts the consumer against a NATS server that is not there, with
// a password in each form nats.go reads one, and checks the error it prints says where it tried
// without the password.
func TestNATSPasswordNeverPrinted(t *testing.T) {
	const secret = "S3cr3tPW"
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	dbURL := pgtest.URL(t)
	for _, natsURL := range []string{
		"nats://alice:" + secret + "@127.0.0.1:1",
		"natsuser:" + secret + "@127.0.0.1:1",
		secret + "@127.0.0.1:1",
		"nats://127.0.0.1:2,natsuser:" + secret + "@127.0.0.1:1",
		"natsuser:pa ss" + secret + "@127.0.0.1:1",
	} {
		err := run(options{dbURL: dbURL, nats: natsconn.Flags{URL: natsURL}, stream: "BILLING", dlqSubject: "dlq.billing.charge", liveVersion: 1,
			shadowOnly: true, concurrency: 1, handlers: 1})
		if err == nil {
			t.Fatalf("%s: connected to a closed port", natsURL)
		}
		if msg := err.Error(); strings.Contains(msg, secret) || !strings.Contains(msg, "127.0.0.1:1") {
			t.Errorf("%s: error %q: want where it tried, without the password", natsURL, msg)
		}
	}
}
