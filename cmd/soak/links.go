package main

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/replayctl/replayctl/internal/faultproxy"
)

// The network's faults, between the consumers and the ledger and between the consumers and
// NATS: a proxy on each path (internal/faultproxy). replayctl itself connects directly.
var linkFaultKinds = []string{"ledger-link-reset", "ledger-link-stall", "ledger-link-latency", "ledger-reply-cut",
	"nats-link-reset", "nats-link-stall"}

// links are a round's proxies: one per ledger server (two with -failover) and one for NATS.
type links struct {
	ledger, nats []*faultproxy.Proxy
}

// startLinks puts proxies in front of the ledger's servers and the NATS server, and returns the
// URLs the consumers use through them.
func (r *roundEnv) startLinks(dbURL string) (ledgerURL, natsURL string, err error) {
	cfg, err := pgconn.ParseConfig(dbURL)
	if err != nil {
		return "", "", err
	}
	targets := []string{}
	if r.pair != nil {
		targets = append(targets, "127.0.0.1:"+strconv.Itoa(r.pair.primary.port), "127.0.0.1:"+strconv.Itoa(r.pair.replica.port))
	} else {
		// A socket directory stands for the same server on TCP, at its port.
		targets = append(targets, net.JoinHostPort("127.0.0.1", strconv.Itoa(int(cfg.Port))))
	}
	hosts := []string{}
	for _, t := range targets {
		p, err := faultproxy.Start(t)
		if err != nil {
			return "", "", err
		}
		r.links.ledger = append(r.links.ledger, p)
		hosts = append(hosts, p.Addr())
	}
	natsURLs := []string{}
	for _, n := range r.s.nats.nodes {
		p, err := faultproxy.Start(strings.TrimPrefix(n.url(), "nats://"))
		if err != nil {
			return "", "", err
		}
		r.links.nats = append(r.links.nats, p)
		natsURLs = append(natsURLs, "nats://"+p.Addr())
	}
	params := "sslmode=disable&search_path=" + r.schema + "&application_name=" + appName
	if r.pair != nil {
		params += "&target_session_attrs=read-write"
	}
	ledgerURL = fmt.Sprintf("postgres://%s@%s/%s?%s", cfg.User, strings.Join(hosts, ","), cfg.Database, params)
	return ledgerURL, strings.Join(natsURLs, ","), nil
}

func (r *roundEnv) stopLinks() {
	for _, p := range append(r.links.ledger, r.links.nats...) {
		p.Close()
	}
}

// injectLink injects one network fault; it reports false for a kind it does not know.
func (r *roundEnv) injectLink(kind string, pause func(min, span int) time.Duration) bool {
	switch kind {
	case "ledger-link-reset":
		for _, p := range r.links.ledger {
			p.Reset()
		}
	case "ledger-link-stall":
		d := pause(500, 3500)
		for _, p := range r.links.ledger {
			p.Stall(d)
		}
	case "ledger-link-latency":
		delay, span := pause(20, 80), pause(2000, 6000)
		for _, p := range r.links.ledger {
			p.Latency(delay, span)
		}
	case "ledger-reply-cut":
		// The next answer from the ledger, whatever statement it ends (a commit among them), is
		// lost with its connection after the server did the work.
		for _, p := range r.links.ledger {
			p.CutNextReply()
		}
	case "nats-link-reset":
		for _, p := range r.links.nats {
			p.Reset()
		}
	case "nats-link-stall":
		d := pause(500, 3500)
		for _, p := range r.links.nats {
			p.Stall(d)
		}
	default:
		return false
	}
	return true
}
