package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// natsServers are the NATS servers the soak runs: one, or a three-node cluster whose streams
// are R3 (-nats-cluster). Each node keeps its port and store across kills.
type natsServers struct {
	nodes []*natsProcess
}

func newNATSServers(bin, dir string, cluster bool) (*natsServers, error) {
	n := 1
	if cluster {
		n = 3
	}
	s := &natsServers{}
	var routes []string
	clusterPorts := make([]int, n)
	for i := range n {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		node := &natsProcess{bin: bin, port: port, dir: filepath.Join(dir, fmt.Sprintf("js-%d", i+1)),
			log: filepath.Join(dir, fmt.Sprintf("nats-server-%d.log", i+1))}
		if cluster {
			if clusterPorts[i], err = freePort(); err != nil {
				return nil, err
			}
			routes = append(routes, "nats://127.0.0.1:"+strconv.Itoa(clusterPorts[i]))
		}
		s.nodes = append(s.nodes, node)
	}
	for i, node := range s.nodes {
		if cluster {
			// -no_advertise: clients keep to the URLs they were given (the soak's proxies), not
			// the servers' own.
			node.args = []string{"--server_name", fmt.Sprintf("n%d", i+1), "--cluster_name", "soak", "--no_advertise=true",
				"--cluster", "nats://127.0.0.1:" + strconv.Itoa(clusterPorts[i]), "--routes", strings.Join(routes, ",")}
		}
	}
	return s, nil
}

// url lists every node for a client.
func (s *natsServers) url() string {
	urls := make([]string, len(s.nodes))
	for i, n := range s.nodes {
		urls[i] = n.url()
	}
	return strings.Join(urls, ",")
}

func (s *natsServers) replicas() int { return len(s.nodes) }

func (s *natsServers) start() error {
	for _, n := range s.nodes {
		if err := n.start(); err != nil {
			return err
		}
	}
	if len(s.nodes) > 1 {
		return s.waitJetStream()
	}
	return nil
}

// waitJetStream waits until the cluster has a JetStream meta leader: streams cannot be made
// before.
func (s *natsServers) waitJetStream() error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var err error
	for ctx.Err() == nil {
		var nc *nats.Conn
		if nc, err = nats.Connect(s.url()); err == nil {
			js, _ := jetstream.New(nc)
			actx, acancel := context.WithTimeout(ctx, 2*time.Second)
			_, err = js.AccountInfo(actx)
			acancel()
			nc.Close()
			if err == nil {
				return nil
			}
		}
		time.Sleep(250 * time.Millisecond)
	}
	return fmt.Errorf("the NATS cluster has no JetStream leader after 60 s: %v", err)
}

func (s *natsServers) stop() {
	for _, n := range s.nodes {
		n.kill()
	}
}

// killRestart kills node i with -9 and starts it again on its port and store after pause.
func (s *natsServers) killRestart(i int, pause time.Duration) error {
	s.nodes[i].kill()
	time.Sleep(pause)
	return s.nodes[i].start()
}

// leaderOf is the index of the node leading stream, or -1 when it cannot be told.
func (s *natsServers) leaderOf(stream string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	nc, err := nats.Connect(s.url())
	if err != nil {
		return -1
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return -1
	}
	st, err := js.Stream(ctx, stream)
	if err != nil {
		return -1
	}
	info := st.CachedInfo()
	if info.Cluster == nil {
		return -1
	}
	for i := range s.nodes {
		if info.Cluster.Leader == fmt.Sprintf("n%d", i+1) {
			return i
		}
	}
	return -1
}
