// Package natstest gives each test its own in-process NATS server with JetStream.
package natstest

import (
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/replayctl/replayctl/internal/natsembed"
)

// Env is one test's server and a connection to it.
type Env struct {
	Server *natsembed.Server
	Conn   *nats.Conn
	JS     jetstream.JetStream
}

// Start runs a fresh server for t, stopped at cleanup. listen makes it reachable from a subprocess
// at Env.Server.ClientURL().
func Start(t testing.TB, listen bool) *Env {
	t.Helper()
	srv, err := natsembed.Start(t.TempDir(), listen)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	nc, err := srv.Connect()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return &Env{Server: srv, Conn: nc, JS: js}
}
