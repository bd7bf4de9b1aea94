package faultproxy_test

import (
	"bufio"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/replayctl/replayctl/internal/faultproxy"
)

// echo is a line echo server; requests counts the lines it answered.
func echo(t *testing.T) (addr string, requests chan string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	requests = make(chan string, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					requests <- line
					_, _ = c.Write([]byte(strings.ToUpper(line)))
				}
			}()
		}
	}()
	return ln.Addr().String(), requests
}

func ask(c net.Conn, r *bufio.Reader, line string) (string, error) {
	if _, err := c.Write([]byte(line + "\n")); err != nil {
		return "", err
	}
	_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
	return r.ReadString('\n')
}

func TestTheProxyForwardsStallsAndCutsAReplyAfterTheRequestWentThrough(t *testing.T) {
	target, requests := echo(t)
	p, err := faultproxy.Start(target)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	if got, err := ask(c, r, "commit"); err != nil || got != "COMMIT\n" {
		t.Fatalf("through the proxy: %q, %v", got, err)
	}
	<-requests

	p.Stall(300 * time.Millisecond)
	start := time.Now()
	if got, err := ask(c, r, "late"); err != nil || got != "LATE\n" || time.Since(start) < 250*time.Millisecond {
		t.Fatalf("a stall of 300ms: %q, %v after %s", got, err, time.Since(start))
	}
	<-requests

	// The server gets the request and answers; the client never sees the answer.
	p.CutNextReply()
	if got, err := ask(c, r, "applied"); err == nil {
		t.Fatalf("a cut reply arrived: %q", got)
	}
	if got := <-requests; got != "applied\n" {
		t.Fatalf("the server got %q, want the request the client sent", got)
	}

	c2, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	r2 := bufio.NewReader(c2)
	if _, err := ask(c2, r2, "again"); err != nil {
		t.Fatalf("a new connection after the cut: %v", err)
	}
	<-requests
	if n := p.Reset(); n != 1 {
		t.Fatalf("Reset closed %d connections, want 1", n)
	}
	if got, err := ask(c2, r2, "after reset"); err == nil {
		t.Fatalf("a reset connection answered %q", got)
	}
}
