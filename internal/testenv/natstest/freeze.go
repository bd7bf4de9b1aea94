package natstest

import (
	"net"
	"sync"
	"testing"
)

// FreezeProxy forwards TCP connections to a server and can stop forwarding without closing
// them: a client behind it sees a connection that is up but silent (no heartbeats, no
// messages), as across a stalled network path, until Thaw.
type FreezeProxy struct {
	// URL is what a client connects to instead of the server.
	URL string

	mu     sync.Mutex
	frozen bool
	thawed *sync.Cond
}

// StartFreezeProxy listens on a loopback port for t and forwards to target (host:port); it stops
// at cleanup.
func StartFreezeProxy(t testing.TB, target string) *FreezeProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("natstest: proxy listen: %v", err)
	}
	p := &FreezeProxy{URL: "nats://" + l.Addr().String()}
	p.thawed = sync.NewCond(&p.mu)
	var conns sync.WaitGroup
	var open []net.Conn
	var openMu sync.Mutex
	t.Cleanup(func() {
		l.Close()
		p.Thaw()
		openMu.Lock()
		for _, c := range open {
			c.Close()
		}
		openMu.Unlock()
		conns.Wait()
	})
	go func() {
		for {
			client, err := l.Accept()
			if err != nil {
				return
			}
			server, err := net.Dial("tcp", target)
			if err != nil {
				client.Close()
				continue
			}
			openMu.Lock()
			open = append(open, client, server)
			openMu.Unlock()
			conns.Add(2)
			go func() { defer conns.Done(); p.copy(server, client) }()
			go func() { defer conns.Done(); p.copy(client, server) }()
		}
	}()
	return p
}

// Freeze holds every byte either way from now on; connections stay open.
func (p *FreezeProxy) Freeze() {
	p.mu.Lock()
	p.frozen = true
	p.mu.Unlock()
}

// Thaw forwards again, what was held first.
func (p *FreezeProxy) Thaw() {
	p.mu.Lock()
	p.frozen = false
	p.mu.Unlock()
	p.thawed.Broadcast()
}

func (p *FreezeProxy) copy(dst, src net.Conn) {
	defer dst.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			for p.frozen {
				p.thawed.Wait()
			}
			p.mu.Unlock()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
