// Package faultproxy is a TCP proxy that injects the network's faults between a client and a
// server on command: connections reset, traffic stalled, latency added, and a reply cut after
// the request went through (a commit applied whose answer the client never gets). cmd/soak puts
// one between the consumers and PostgreSQL and one between the consumers and NATS.
package faultproxy

import (
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Proxy forwards every connection made to Addr to its target.
type Proxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	conns map[*link]struct{}
	// until is when a stall ends; latency is added to each chunk forwarded until latencyUntil.
	until, latencyUntil time.Time
	latency             time.Duration
	// cutReplies counts replies to cut: the next chunk from the server on any connection is
	// dropped and that connection reset, once per count.
	cutReplies int
	closed     bool
	wg         sync.WaitGroup
}

// link is one client connection and its connection to the target.
type link struct {
	client, server net.Conn
	// ended counts the directions that ended; the second closes the link.
	ended atomic.Int32
}

// Start listens on a free port of 127.0.0.1 and forwards to target (host:port).
func Start(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, conns: map[*link]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.DialTimeout("tcp", p.target, 5*time.Second)
		if err != nil {
			abort(c)
			continue
		}
		l := &link{client: c, server: s}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			abort(c)
			abort(s)
			return
		}
		p.conns[l] = struct{}{}
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(l, c, s, false)
		go p.pipe(l, s, c, true)
	}
}

// pipe copies from src to dst a chunk at a time, obeying stalls, latency and cuts; fromServer
// says which way it copies.
func (p *Proxy) pipe(l *link, src, dst net.Conn, fromServer bool) {
	defer p.wg.Done()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.pass(fromServer) {
				p.drop(l) // the reply is cut: both sides reset
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				p.drop(l)
				return
			}
		}
		if err != nil {
			tc, ok := dst.(*net.TCPConn)
			if !errors.Is(err, io.EOF) || !ok {
				p.drop(l)
				return
			}
			// Half-close: the other direction may still be answering.
			_ = tc.CloseWrite()
			if l.ended.Add(1) == 2 {
				p.drop(l)
			}
			return
		}
	}
}

// pass waits out a stall and the latency, and reports whether the chunk goes through: false when
// it is a reply to cut.
func (p *Proxy) pass(fromServer bool) bool {
	for {
		p.mu.Lock()
		stall := time.Until(p.until)
		lat := time.Duration(0)
		if time.Now().Before(p.latencyUntil) {
			lat = p.latency
		}
		cut := fromServer && p.cutReplies > 0
		if cut {
			p.cutReplies--
		}
		p.mu.Unlock()
		if cut {
			return false
		}
		if stall > 0 {
			time.Sleep(min(stall, 50*time.Millisecond))
			continue
		}
		if lat > 0 {
			time.Sleep(lat)
		}
		return true
	}
}

func (p *Proxy) drop(l *link) {
	p.mu.Lock()
	delete(p.conns, l)
	p.mu.Unlock()
	abort(l.client)
	abort(l.server)
}

// abort closes c with a reset (SO_LINGER 0), as a dropped connection looks to its peer.
func abort(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}

// Reset resets every open connection, both sides, and returns how many there were.
func (p *Proxy) Reset() int {
	p.mu.Lock()
	links := make([]*link, 0, len(p.conns))
	for l := range p.conns {
		links = append(links, l)
	}
	p.mu.Unlock()
	for _, l := range links {
		abort(l.client)
		abort(l.server)
	}
	return len(links)
}

// Stall holds every byte in both directions for d; the connections stay open.
func (p *Proxy) Stall(d time.Duration) {
	p.mu.Lock()
	p.until = time.Now().Add(d)
	p.mu.Unlock()
}

// Latency adds delay to every chunk forwarded, for the next span of time.
func (p *Proxy) Latency(delay, span time.Duration) {
	p.mu.Lock()
	p.latency, p.latencyUntil = delay, time.Now().Add(span)
	p.mu.Unlock()
}

// CutNextReply drops the next chunk the server sends on any connection and resets that
// connection: the request went through, its answer never arrives.
func (p *Proxy) CutNextReply() {
	p.mu.Lock()
	p.cutReplies++
	p.mu.Unlock()
}

// Close stops listening and resets every connection.
func (p *Proxy) Close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	_ = p.ln.Close()
	p.Reset()
	p.wg.Wait()
}
