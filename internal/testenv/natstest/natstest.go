// Package natstest gives each test its own in-process NATS server with JetStream.
package natstest

import (
	"fmt"
	"net"
	"os"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/replayctl/replayctl/internal/natsembed"
)

// Env is one test's server and a connection to it.
type Env struct {
	// Server is the embedded server; nil when Start ran an external binary (ExternalServerEnv).
	Server *natsembed.Server
	Conn   *nats.Conn
	JS     jetstream.JetStream
	// URL is the server's client URL when it listens (Start with listen true, or an external
	// binary), else empty.
	URL string

	restart *restartable
}

// Start runs a fresh server for t, stopped at cleanup. listen makes it reachable from a subprocess
// at Env.URL. With $REPLAYCTL_TEST_NATS_SERVER set (ExternalServerEnv) the server is that
// nats-server binary, always listening, and Env.Server is nil: tests that need the embedded
// server's internals are not run that way.
func Start(t testing.TB, listen bool) *Env {
	t.Helper()
	if binary := os.Getenv(ExternalServerEnv); binary != "" {
		return startExternal(t, binary)
	}
	srv, err := natsembed.Start(t.TempDir(), listen)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	env := connect(t, srv)
	if listen {
		env.URL = srv.ClientURL()
	}
	return env
}

// StartMaxPayload runs a server for t like Start(t, false) whose max_payload is maxPayload bytes,
// for messages that fit as they were stored but not as they would be sent on.
func StartMaxPayload(t testing.TB, maxPayload int32) *Env {
	t.Helper()
	srv := startServer(t, &server.Options{JetStream: true, StoreDir: t.TempDir(), DontListen: true, NoLog: true, NoSigs: true,
		MaxPayload: maxPayload})
	t.Cleanup(srv.Stop)
	return connect(t, srv)
}

// connect opens t's connection to srv, closed at cleanup.
func connect(t testing.TB, srv *natsembed.Server) *Env {
	t.Helper()
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

// restartable is what Restart needs to bring a server back as it was.
type restartable struct {
	opts *server.Options
}

// StartRestartable runs a server for t like Start with listen true, but on a fixed loopback port
// and with a store that outlives the server, so Restart can stop it and start another in its
// place: clients (Env.Conn, a subprocess's) reconnect to the same URL and find their streams,
// messages and durables. Env.Conn reconnects forever, every 100ms. Reach the server through
// Env.Conn or Env.Server.ClientURL(), not Env.Server.Connect, which is in-process only.
func StartRestartable(t testing.TB) *Env {
	t.Helper()
	port, err := freePort()
	if err != nil {
		t.Fatalf("natstest: pick a port: %v", err)
	}
	opts := &server.Options{Host: "127.0.0.1", Port: port, JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true}
	env := &Env{restart: &restartable{opts: opts}}
	env.Server = startServer(t, opts)
	// The cleanup reads env.Server when it runs, so it stops whichever server Restart left.
	t.Cleanup(func() { env.Server.Stop() })
	nc, err := nats.Connect(env.Server.ClientURL(), nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	if err != nil {
		t.Fatalf("natstest: connect to %s: %v", env.Server.ClientURL(), err)
	}
	t.Cleanup(nc.Close)
	if env.JS, err = jetstream.New(nc); err != nil {
		t.Fatal(err)
	}
	env.Conn = nc
	return env
}

// Restart stops a StartRestartable server (clients see the connection drop), waits down, and
// starts a new server on the same port and store. It returns once the new server accepts
// connections; clients reconnect on their own schedule. Call it from the test goroutine: it
// replaces Env.Server.
func (e *Env) Restart(t testing.TB, down time.Duration) {
	t.Helper()
	if e.restart == nil {
		t.Fatal("natstest: Restart needs a server from StartRestartable")
	}
	e.Server.Stop()
	time.Sleep(down)
	srv, err := newServer(e.restart.opts)
	if err != nil {
		t.Fatalf("natstest: restart the server on port %d (another process took the port?): %v", e.restart.opts.Port, err)
	}
	e.Server = srv
}

func startServer(t testing.TB, opts *server.Options) *natsembed.Server {
	t.Helper()
	srv, err := newServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

func newServer(opts *server.Options) (*natsembed.Server, error) {
	// The server keeps a pointer to its options; a restart gets a copy of its own.
	o := *opts
	ns, err := server.NewServer(&o)
	if err != nil {
		return nil, err
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		ns.Shutdown()
		return nil, fmt.Errorf("server on %s:%d not ready after 10s", o.Host, o.Port)
	}
	return &natsembed.Server{Server: ns}, nil
}

// freePort asks the kernel for a loopback port nobody uses right now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Connect opens another connection to e's server, embedded or external; the caller closes it.
func (e *Env) Connect(opts ...nats.Option) (*nats.Conn, error) {
	if e.Server != nil {
		return e.Server.Connect(opts...)
	}
	return nats.Connect(e.URL, opts...)
}
