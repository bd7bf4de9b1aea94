package consumer_test

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/replayctl/replayctl/consumer"
)

func TestNewNamesEveryBadField(t *testing.T) {
	t.Parallel()
	_, err := consumer.New(consumer.Config{Name: "billing.v2", Lease: time.Second, Heartbeat: 500 * time.Millisecond,
		MaxDeliver: -1, DLQSubject: "dlq.>", ResultRetention: 48 * time.Hour, EvidenceRetention: time.Hour})
	if !errors.Is(err, consumer.ErrBadConfig) {
		t.Fatalf("New: %v, want ErrBadConfig", err)
	}
	for _, field := range []string{"Name:", "Store:", "Conn:", "Handler:", "Heartbeat:", "MaxDeliver:", "DLQSubject:", "EvidenceRetention:"} {
		if !strings.Contains(err.Error(), field) {
			t.Errorf("the error does not name %s: %v", field, err)
		}
	}
	if strings.Contains(err.Error(), "Lease:") {
		t.Errorf("a valid Lease reported as bad: %v", err)
	}
}

func TestNewFillsTheDefaults(t *testing.T) {
	e := newEnv(t)
	c, err := consumer.New(consumer.Config{Name: "billing", Store: e.store, Conn: e.nats.Conn,
		Handler: func(context.Context, consumer.Event, *consumer.Effects) (consumer.Result, error) {
			return consumer.Result{}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	cfg := c.Config()
	if cfg.Durable != "billing" || cfg.LiveVersion != 1 || cfg.Lease != 2*time.Minute || cfg.Heartbeat != 30*time.Second ||
		cfg.MaxDeliver != 5 || cfg.ResultRetention != 30*24*time.Hour || cfg.EvidenceRetention != 400*24*time.Hour ||
		cfg.ShadowConcurrency != 32 || cfg.Logger == nil {
		t.Fatalf("defaults %+v", cfg)
	}
	if !regexp.MustCompile(`^.+-\d+-[0-9a-f]{8}$`).MatchString(cfg.Owner) {
		t.Fatalf("owner %q, want <hostname>-<pid>-<8 hex>", cfg.Owner)
	}
	short, err := consumer.New(consumer.Config{Name: "billing", Store: e.store, Conn: e.nats.Conn, Handler: cfg.Handler, Lease: time.Second})
	if err != nil {
		t.Fatalf("a short lease with the default heartbeat: %v", err)
	}
	if hb := short.Config().Heartbeat; hb >= 500*time.Millisecond {
		t.Fatalf("heartbeat %s for a 1s lease, want below Lease/2", hb)
	}
}
