package natstest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/replayctl/replayctl/internal/natsembed"
)

// Cluster is an in-process JetStream cluster on loopback: each server has a fixed client and
// route port and its own store, so Kill and Restart bring one back as it was.
type Cluster struct {
	// Servers holds each server, nil while it is killed.
	Servers []*natsembed.Server
	opts    []*server.Options
}

// StartCluster runs a JetStream cluster of size servers for t, stopped at cleanup, and returns
// once it has a meta leader (streams can be created).
func StartCluster(t testing.TB, size int) *Cluster {
	t.Helper()
	clientPorts, routePorts := make([]int, size), make([]int, size)
	routes := make([]string, size)
	for i := range size {
		var err error
		if clientPorts[i], err = freePort(); err != nil {
			t.Fatalf("natstest: pick a port: %v", err)
		}
		if routePorts[i], err = freePort(); err != nil {
			t.Fatalf("natstest: pick a port: %v", err)
		}
		routes[i] = fmt.Sprintf("nats://127.0.0.1:%d", routePorts[i])
	}
	c := &Cluster{Servers: make([]*natsembed.Server, size)}
	for i := range size {
		c.opts = append(c.opts, &server.Options{
			ServerName: fmt.Sprintf("n%d", i+1), Host: "127.0.0.1", Port: clientPorts[i],
			JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true,
			Cluster: server.ClusterOpts{Name: "replayctl-test", Host: "127.0.0.1", Port: routePorts[i]},
			// Every server lists every route, its own included; a server skips itself.
			Routes: server.RoutesFromStr(strings.Join(routes, ",")),
		})
	}
	t.Cleanup(func() {
		for i := range c.Servers {
			c.Kill(i)
		}
	})
	for i := range size {
		c.Restart(t, i)
	}
	c.waitMetaLeader(t)
	return c
}

// URLs is every server's client URL, comma separated, for nats.Connect or a subprocess.
func (c *Cluster) URLs() string {
	urls := make([]string, len(c.opts))
	for i, o := range c.opts {
		urls[i] = fmt.Sprintf("nats://127.0.0.1:%d", o.Port)
	}
	return strings.Join(urls, ",")
}

// Connect opens a connection for t to the cluster, closed at cleanup. It reconnects forever,
// every 100ms. With first >= 0 it tries server first, then the others in order, so a test knows
// which server a client is on; with first < 0 the order is random.
func (c *Cluster) Connect(t testing.TB, first int) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	opts := []nats.Option{nats.MaxReconnects(-1), nats.ReconnectWait(100 * time.Millisecond)}
	urls := c.URLs()
	if first >= 0 {
		all := strings.Split(urls, ",")
		urls = strings.Join(append(all[first:], all[:first]...), ",")
		opts = append(opts, nats.DontRandomize())
	}
	nc, err := nats.Connect(urls, opts...)
	if err != nil {
		t.Fatalf("natstest: connect to the cluster %s: %v", urls, err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return nc, js
}

// Index is the index of the server named name (n1, n2, ...), -1 when there is none.
func (c *Cluster) Index(name string) int {
	for i, o := range c.opts {
		if o.ServerName == name {
			return i
		}
	}
	return -1
}

// ServerOf is the index of the server nc is connected to, -1 when it is not connected.
func (c *Cluster) ServerOf(nc *nats.Conn) int {
	url := nc.ConnectedUrl()
	for i, o := range c.opts {
		if strings.HasSuffix(url, fmt.Sprintf(":%d", o.Port)) {
			return i
		}
	}
	return -1
}

// Kill shuts server i down at once (in-process, the nearest to kill -9: its clients and routes
// drop, nothing is handed over); a killed server is left alone.
func (c *Cluster) Kill(i int) {
	if c.Servers[i] != nil {
		c.Servers[i].Stop()
		c.Servers[i] = nil
	}
}

// Restart starts server i again on its ports and store, returning once it accepts connections;
// it rejoins the cluster and catches up on its own.
func (c *Cluster) Restart(t testing.TB, i int) {
	t.Helper()
	if err := c.Start(i); err != nil {
		t.Fatal(err)
	}
}

// Start is Restart for a goroutine other than the test's: it returns what Restart fails t with.
func (c *Cluster) Start(i int) error {
	if c.Servers[i] != nil {
		return fmt.Errorf("natstest: server %d is running; Kill it first", i)
	}
	srv, err := newServer(c.opts[i])
	if err != nil {
		return fmt.Errorf("natstest: start cluster server %d: %w", i, err)
	}
	c.Servers[i] = srv
	return nil
}

// waitMetaLeader waits until the cluster answers JetStream API requests.
func (c *Cluster) waitMetaLeader(t testing.TB) {
	t.Helper()
	_, js := c.Connect(t, -1)
	deadline := time.Now().Add(20 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := js.AccountInfo(ctx)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("natstest: the cluster has no JetStream meta leader after 20s: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// StepDownConsumer asks the leader of stream's durable to step down, so another server leads it.
func StepDownConsumer(ctx context.Context, nc *nats.Conn, stream, durable string) error {
	subject := fmt.Sprintf("$JS.API.CONSUMER.LEADER.STEPDOWN.%s.%s", stream, durable)
	resp, err := nc.RequestWithContext(ctx, subject, nil)
	if err != nil {
		return fmt.Errorf("step down the leader of %s on %s: %w", durable, stream, err)
	}
	if strings.Contains(string(resp.Data), `"error"`) {
		return fmt.Errorf("step down the leader of %s on %s: %s", durable, stream, resp.Data)
	}
	return nil
}
