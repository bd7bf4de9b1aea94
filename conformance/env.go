package conformance

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/replayctl/replayctl/internal/billing"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/protocol"
	"github.com/replayctl/replayctl/seal"
)

// The reference service's names, which a consumer under test takes as its defaults.
const (
	ConsumerName = "billing"
	// Stream captures LiveSubject; the consumer's durable on it is named after the consumer.
	Stream      = "BILLING"
	LiveSubject = "billing.charge"
	// DLQStream captures DLQSubject, where the consumer dead-letters.
	DLQStream  = "DLQ_BILLING"
	DLQSubject = "dlq.billing.charge"
)

// Env is what the rules drive and observe: the NATS connection the consumer under test shares,
// the ledger, and the fake provider's charges.
type Env struct {
	NC *nats.Conn
	JS jetstream.JetStream
	// Store reads the ledger as replayctl does; Seed writes the states no message makes (a crashed
	// instance's claim), through the ledger's own statements.
	Store *ledger.Store
	Seed  *pgxpool.Pool
	// Records is the fake provider's list of charges: an external call is a charge there.
	Records *billing.Records
	// Run tells this run's events apart from an earlier run's on the same ledger.
	Run string
	// Process is the consumer under test's process, which kill-mid-call kills and starts again.
	Process Process
	// ResultKeyring is the keyring the consumer was given (ResultKeyringEnv): its stored result
	// bodies must open with it.
	ResultKeyring *seal.Keyring
}

// ResultKeyringEnv names the keyring file a consumer under test seals its result bodies with.
const ResultKeyringEnv = "REPLAYCTL_RESULT_KEYRING"

// Process controls the consumer under test.
type Process interface {
	// Kill sends SIGKILL to the consumer's process group and returns once it exited: a crash, no
	// chance to record anything.
	Kill() error
	// Start runs the consumer's command again and returns once it serves.
	Start(ctx context.Context) error
}

// Streams creates the billing stream and its DLQ stream, as an operator would before starting
// the service.
func Streams(ctx context.Context, js jetstream.JetStream) error {
	for name, subject := range map[string]string{Stream: "billing.>", DLQStream: "dlq.billing.>"} {
		_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{subject}})
		if err != nil && !errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			return fmt.Errorf("create stream %s on %s: %w", name, subject, err)
		}
	}
	return nil
}

func (e *Env) event(rule string) string { return "conf-" + e.Run + "-" + rule }

// publish puts payload on the live subject as eventID, with extra headers, and returns its
// stream sequence.
func (e *Env) publish(ctx context.Context, eventID string, payload []byte, extra map[string]string) (uint64, error) {
	msg := nats.NewMsg(LiveSubject)
	msg.Data = payload
	if eventID != "" {
		msg.Header.Set(protocol.HeaderEventID, eventID)
	}
	for k, v := range extra {
		msg.Header.Set(k, v)
	}
	ack, err := e.JS.PublishMsg(ctx, msg)
	if err != nil {
		return 0, fmt.Errorf("publish %s: %w", eventID, err)
	}
	return ack.Sequence, nil
}

// handled waits until the consumer's durable has acknowledged (or terminated) every message up to
// seq: it is done with them, whatever it did.
func (e *Env) handled(ctx context.Context, seq uint64) error {
	return e.waitFor(ctx, fmt.Sprintf("the consumer to acknowledge stream message %d", seq), func() (bool, error) {
		c, err := e.JS.Consumer(ctx, Stream, ConsumerName)
		if err != nil {
			return false, nil // not created yet
		}
		info, err := c.Info(ctx)
		if err != nil {
			return false, err
		}
		return info.AckFloor.Stream >= seq, nil
	})
}

// chargedBefore writes the provider's own record of a charge of eventID's order, made before the
// kit looks (by an instance that died since, or long ago): the look-up finds it.
func (e *Env) chargedBefore(ctx context.Context, eventID string, cents int64) error {
	provider := billing.NewProvider()
	provider.Records = e.Records
	if _, err := provider.Charge(ctx, "order-"+eventID, cents, "EUR"); err != nil {
		return fmt.Errorf("record the provider's charge of order-%s: %w", eventID, err)
	}
	return nil
}

// charges counts the provider's charges of an order.
func (e *Env) charges(ctx context.Context, orderID string) (int, error) {
	cs, err := e.Records.ChargesOf(ctx, orderID)
	return len(cs), err
}

// rows reads every ledger row of eventID.
func (e *Env) rows(ctx context.Context, eventID string) ([]ledger.UncertainRow, error) {
	return e.Store.EffectsOfEventForReview(ctx, ConsumerName, eventID)
}

// row is eventID's row under version, nil when there is none.
func (e *Env) row(ctx context.Context, eventID string, version int) (*ledger.UncertainRow, error) {
	rows, err := e.rows(ctx, eventID)
	if err != nil {
		return nil, err
	}
	for i := range rows {
		if rows[i].EffectVersion == version {
			return &rows[i], nil
		}
	}
	return nil, nil
}

// waitRow waits until eventID's row under version is in one of states.
func (e *Env) waitRow(ctx context.Context, eventID string, version int, states ...string) (*ledger.UncertainRow, error) {
	var last *ledger.UncertainRow
	err := e.waitFor(ctx, fmt.Sprintf("%s's ledger row under version %d to be %s", eventID, version, strings.Join(states, " or ")), func() (bool, error) {
		r, err := e.row(ctx, eventID, version)
		last = r
		return r != nil && slices.Contains(states, r.State), err
	})
	if err != nil && last != nil {
		return last, fmt.Errorf("%w (it is %s)", err, last.State)
	}
	return last, err
}

// deliver publishes eventID and waits until the consumer is done with it, whatever it did.
func (e *Env) deliver(ctx context.Context, eventID string, payload []byte, extra map[string]string) error {
	seq, err := e.publish(ctx, eventID, payload, extra)
	if err != nil {
		return err
	}
	return e.handled(ctx, seq)
}

// onlyRow is eventID's one ledger row as the SDK reads it (its result body and hash too); an
// error when the event has none or several.
func (e *Env) onlyRow(ctx context.Context, eventID string) (ledger.EffectRow, error) {
	rows, err := ledger.EffectsForEvent(ctx, e.Seed, ConsumerName, eventID)
	if err != nil {
		return ledger.EffectRow{}, err
	}
	if len(rows) != 1 {
		return ledger.EffectRow{}, fmt.Errorf("%d ledger rows of %s, want 1", len(rows), eventID)
	}
	return rows[0], nil
}

// wantRows fails unless eventID has exactly n ledger rows, whatever their versions.
func (e *Env) wantRows(ctx context.Context, eventID string, n int) error {
	rows, err := e.rows(ctx, eventID)
	if err != nil {
		return err
	}
	if len(rows) != n {
		return fmt.Errorf("%d ledger rows of %s, want %d", len(rows), eventID, n)
	}
	return nil
}

// waitFor polls cond until it holds or ctx ends; the error names what was awaited.
func (e *Env) waitFor(ctx context.Context, what string, cond func() (bool, error)) error {
	for {
		ok, err := cond()
		if err != nil {
			return fmt.Errorf("waiting for %s: %w", what, err)
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("gave up waiting for %s", what)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
