package consumer_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/replayctl/replayctl/consumer"
	"github.com/replayctl/replayctl/fingerprint"
	"github.com/replayctl/replayctl/internal/testenv/pgtest"
	"github.com/replayctl/replayctl/protocol"
)

func shadowHeaders(eventID string) map[string]string {
	return map[string]string{
		protocol.HeaderEventID: eventID, protocol.HeaderReplayJob: "job-1",
		protocol.HeaderReplayMode: protocol.ModeShadow, protocol.HeaderReplayEffectVersion: "2",
	}
}

func (e *env) shadowRequest(headers map[string]string, payload string) protocol.ShadowReply {
	e.t.Helper()
	msg := nats.NewMsg(protocol.ShadowSubject(consumerName))
	msg.Data = []byte(payload)
	for k, v := range headers {
		msg.Header.Set(k, v)
	}
	resp, err := e.nats.Conn.RequestMsg(msg, 5*time.Second)
	if err != nil {
		e.t.Fatal(err)
	}
	var reply protocol.ShadowReply
	if err := json.Unmarshal(resp.Data, &reply); err != nil {
		e.t.Fatalf("shadow reply %s: %v", resp.Data, err)
	}
	return reply
}

func (e *env) serveShadow(c *consumer.Consumer) func() {
	e.t.Helper()
	// t.Context has no deadline, as a service's own context usually has none.
	stop, err := c.ServeShadow(e.t.Context())
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(stop)
	return stop
}

func TestShadowRunsTheHandlerWithoutWrites(t *testing.T) {
	e := newEnv(t)
	e.serveShadow(e.newConsumer(nil))

	reply := e.shadowRequest(shadowHeaders("e1"), orderJSON("acct-1", 250))
	wantResult := `{"charged":250,"ref":""}`
	if reply.Status != protocol.StatusOK || reply.EventID != "e1" || reply.Error != "" ||
		string(reply.Result) != wantResult || reply.ResultHash != fingerprint.Payload([]byte(wantResult)) {
		t.Fatalf("reply %+v (result %s)", reply, reply.Result)
	}
	if !reflect.DeepEqual(reply.Effects, []protocol.Effect{{Kind: "charge", Target: "acct-1", Suppressed: true}}) {
		t.Fatalf("effects %+v", reply.Effects)
	}

	declined := e.shadowRequest(shadowHeaders("e2"), orderJSON("acct-1", 0))
	wantDeclined := `{"error":"amount must be positive"}`
	if declined.Status != protocol.StatusOK || string(declined.Result) != wantDeclined ||
		declined.ResultHash != fingerprint.Payload([]byte(wantDeclined)) || declined.Effects == nil {
		t.Fatalf("business failure reply %+v: want status ok with the result the ledger stores", declined)
	}
	if n := e.p.calls.Load(); n != 0 {
		t.Fatalf("shadow made %d provider calls", n)
	}
	if n := e.count(`select count(*) from effects`); n != 0 {
		t.Fatalf("shadow wrote %d ledger rows", n)
	}
}

func TestShadowAnswersBadRequestsWithAnError(t *testing.T) {
	e := newEnv(t)
	c := e.newConsumer(func(cfg *consumer.Config) {
		cfg.Handler = func(ctx context.Context, ev consumer.Event, fx *consumer.Effects) (consumer.Result, error) {
			switch string(ev.Payload) {
			case "transient":
				return consumer.Result{}, errors.New("inventory service unavailable")
			case "panic":
				panic("nil order")
			}
			return consumer.Result{Body: "ok"}, nil
		}
	})
	e.serveShadow(c)
	without := func(drop string) map[string]string {
		h := shadowHeaders("e1")
		delete(h, drop)
		return h
	}
	with := func(k, v string) map[string]string {
		h := shadowHeaders("e1")
		h[k] = v
		return h
	}
	tests := []struct {
		name    string
		headers map[string]string
		payload string
		want    string
	}{
		{"no event id", without(protocol.HeaderEventID), "", "Event-Id"},
		{"event id with a control character", with(protocol.HeaderEventID, "e\x01"), "", "control character"},
		{"no mode", without(protocol.HeaderReplayMode), "", "Replay-Mode"},
		{"execute mode", with(protocol.HeaderReplayMode, protocol.ModeExecute), "", "Replay-Mode"},
		{"no job", without(protocol.HeaderReplayJob), "", "Replay-Job"},
		{"version 0", with(protocol.HeaderReplayEffectVersion, "0"), "", "Replay-Effect-Version"},
		{"version not a number", with(protocol.HeaderReplayEffectVersion, "v2"), "", "Replay-Effect-Version"},
		{"write-forbidden misspelt", with(protocol.HeaderReplayWriteForbidden, "yes"), "", "Replay-Write-Forbidden"},
		{"transient failure", shadowHeaders("e1"), "transient", "inventory service unavailable"},
		{"panic", shadowHeaders("e1"), "panic", "panicked"},
	}
	for _, tt := range tests {
		reply := e.shadowRequest(tt.headers, tt.payload)
		if reply.Status != protocol.StatusError || !strings.Contains(reply.Error, tt.want) || reply.Result != nil || reply.ResultHash != "" {
			t.Errorf("%s: reply %+v, want status error naming %q", tt.name, reply, tt.want)
		}
	}
	if reply := e.shadowRequest(shadowHeaders("e1"), "fine"); reply.Status != protocol.StatusOK {
		t.Fatalf("the responder stopped answering after bad requests: %+v", reply)
	}
}

func TestShadowQueueGroupAnswersEachRequestOnce(t *testing.T) {
	e := newEnv(t)
	var handled [2]atomic.Int64
	for i := range handled {
		e.serveShadow(e.newConsumer(func(cfg *consumer.Config) {
			cfg.Handler = func(context.Context, consumer.Event, *consumer.Effects) (consumer.Result, error) {
				handled[i].Add(1)
				return consumer.Result{Body: i}, nil
			}
		}))
	}
	const requests = 40
	for range requests {
		if reply := e.shadowRequest(shadowHeaders("e1"), "{}"); reply.Status != protocol.StatusOK {
			t.Fatalf("reply %+v", reply)
		}
	}
	a, b := handled[0].Load(), handled[1].Load()
	if a+b != requests || a == 0 || b == 0 {
		t.Fatalf("instances handled %d and %d of %d requests: want each request handled once, by either", a, b, requests)
	}
}

func TestShadowStopAnswersRequestsInFlight(t *testing.T) {
	e := newEnv(t)
	release, entered := make(chan struct{}), make(chan struct{})
	stop := e.serveShadow(e.newConsumer(func(cfg *consumer.Config) {
		cfg.Handler = func(_ context.Context, ev consumer.Event, _ *consumer.Effects) (consumer.Result, error) {
			if ev.ID == "slow" {
				close(entered)
				<-release
			}
			return consumer.Result{Body: ev.ID}, nil
		}
	}))
	replies := make(chan protocol.ShadowReply, 1)
	go func() { replies <- e.shadowRequest(shadowHeaders("slow"), "{}") }()
	<-entered

	var stopped atomic.Bool
	var wg sync.WaitGroup
	wg.Go(func() { stop(); stopped.Store(true) })
	// Draining withdraws the subscription at once: new requests find no responder.
	pgtest.WaitFor(t, 5*time.Second, func() (bool, error) {
		msg := nats.NewMsg(protocol.ShadowSubject(consumerName))
		for k, v := range shadowHeaders("probe") {
			msg.Header.Set(k, v)
		}
		_, err := e.nats.Conn.RequestMsg(msg, time.Second)
		if errors.Is(err, nats.ErrNoResponders) {
			return true, nil
		}
		return false, err
	})
	if stopped.Load() {
		t.Fatal("stop returned while a request was in flight")
	}
	close(release)
	if reply := <-replies; reply.Status != protocol.StatusOK || string(reply.Result) != `"slow"` {
		t.Fatalf("in-flight reply %+v", reply)
	}
	wg.Wait()
}
