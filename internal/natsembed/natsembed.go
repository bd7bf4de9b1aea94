// Package natsembed runs a nats-server with JetStream inside this process, for the demo and tests.
package natsembed

import (
	"fmt"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// Server is a running in-process NATS server with JetStream.
type Server struct {
	*server.Server
	listening bool
}

// Start runs a JetStream-enabled server storing its data in storeDir. With listen false it accepts
// in-process connections only; with listen true it also listens on a free loopback port, so that a
// subprocess can connect to ClientURL.
func Start(storeDir string, listen bool) (*Server, error) {
	opts := &server.Options{
		JetStream: true,
		StoreDir:  storeDir,
		NoLog:     true,
		NoSigs:    true,
	}
	if listen {
		opts.Host = "127.0.0.1"
		opts.Port = -1
	} else {
		opts.DontListen = true
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("start embedded NATS server: %w", err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		ns.Shutdown()
		return nil, fmt.Errorf("embedded NATS server not ready after 10s (store %s)", storeDir)
	}
	return &Server{Server: ns, listening: listen}, nil
}

// Connect opens a client connection to the server, in-process unless the server listens.
func (s *Server) Connect(opts ...nats.Option) (*nats.Conn, error) {
	if !s.listening {
		opts = append(opts, nats.InProcessServer(s.Server))
	}
	nc, err := nats.Connect(s.ClientURL(), opts...)
	if err != nil {
		return nil, fmt.Errorf("connect to embedded NATS server: %w", err)
	}
	return nc, nil
}

// Stop shuts the server down and waits until it has.
func (s *Server) Stop() {
	s.Shutdown()
	s.WaitForShutdown()
}
