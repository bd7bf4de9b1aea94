package reconcile_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/replayctl/replayctl/consumer"
	"github.com/replayctl/replayctl/internal/billing"
	"github.com/replayctl/replayctl/internal/testenv/exectest"
	"github.com/replayctl/replayctl/internal/testenv/pgtest"
	"github.com/replayctl/replayctl/reconcile"
)

// world is an exectest world whose billing consumer left real uncertain rows: events in charged
// were charged but the provider's reply was lost, events in uncharged timed out before the
// provider charged anything; the rest completed.
type world struct {
	*exectest.Env
	orders *billing.Orders
}

// newWorld handles n live events through the billing consumer, then keeps it running with the
// billing look-up when withLookup, or without any look-up.
func newWorld(t *testing.T, n int, charged, uncharged []int, withLookup bool) *world {
	t.Helper()
	return newWorldKeeping(t, n, charged, uncharged, withLookup, false)
}

// newWorldKeeping is newWorld whose billing consumer keeps its orders and its provider's charges
// in the database (billing.Records) when shared, as every instance of a real service would.
func newWorldKeeping(t *testing.T, n int, charged, uncharged []int, withLookup, shared bool) *world {
	t.Helper()
	w := &world{Env: exectest.New(t, exectest.Options{}), orders: billing.NewOrders()}
	if shared {
		records := w.records()
		w.orders, w.Provider.Records = billing.SharedOrders(records), records
	}
	outcome := map[string]string{}
	for _, i := range charged {
		outcome[exectest.EventID(i)] = "charged"
	}
	for _, i := range uncharged {
		outcome[exectest.EventID(i)] = "uncharged"
	}
	ordinary := billing.Handler(w.Provider, time.Now)
	handler := w.orders.Record(func(ctx context.Context, ev consumer.Event, fx *consumer.Effects) (consumer.Result, error) {
		kind, odd := outcome[ev.ID]
		if !odd {
			return ordinary(ctx, ev, fx)
		}
		var o billing.Order
		if err := json.Unmarshal(ev.Payload, &o); err != nil {
			return consumer.Result{}, err
		}
		_, err := fx.Call(ctx, billing.EffectCharge, billing.TargetCharge, func(ctx context.Context) (string, error) {
			if kind == "charged" {
				if _, err := w.Provider.Charge(ctx, o.OrderID, o.AmountCents, o.Currency); err != nil {
					return "", err
				}
				return "", fmt.Errorf("connection reset before the provider's reply: %w", consumer.ErrOutcomeUnknown)
			}
			return "", fmt.Errorf("request timed out: %w", consumer.ErrOutcomeUnknown)
		})
		return consumer.Result{}, err
	})
	c := w.NewConsumer(handler, func(cfg *consumer.Config) {
		if withLookup {
			cfg.Lookup = billing.Lookup(w.Provider, w.orders)
		}
	})
	w.RunConsumer(c)
	for i := range n {
		data, err := json.Marshal(exectest.Order(i))
		if err != nil {
			t.Fatal(err)
		}
		msg := nats.NewMsg(exectest.OriginalSubject)
		msg.Data = data
		msg.Header.Set("Event-Id", exectest.EventID(i))
		if _, err := w.NATS.JS.PublishMsg(w.Ctx, msg); err != nil {
			t.Fatal(err)
		}
	}
	// A failed wait names the rows: which events have no outcome, and what their rows say.
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("rows when the test failed: %s", w.rowsDetail())
		}
	})
	pgtest.WaitFor(t, 10*time.Second, func() (bool, error) {
		return w.QueryInt(`select count(*) from effects where consumer = 'billing' and state in ('completed', 'uncertain')`) == int64(n), nil
	})
	return w
}

// records opens another connection to the billing service's shared records, as an instance does.
func (w *world) records() *billing.Records {
	w.T.Helper()
	r, err := billing.OpenRecords(w.Ctx, w.DatabaseURL)
	if err != nil {
		w.T.Fatal(err)
	}
	w.T.Cleanup(r.Close)
	return r
}

// run reconciles the billing consumer's rows with o's flags.
func (w *world) run(o reconcile.Options) (*reconcile.Report, error) {
	w.T.Helper()
	o.Consumer, o.Actor = exectest.Consumer, "alice"
	if o.Timeout == 0 {
		o.Timeout = 2 * time.Second
	}
	return reconcile.Run(w.Ctx, w.NATS.Conn, w.Store, o)
}

// states renders every billing row as "event:state[:review_state]", by event ID.
func (w *world) states() string {
	w.T.Helper()
	var s string
	if err := w.DB.QueryRow(w.Ctx, `select coalesce(string_agg(event_id || ':' || state || coalesce(':' || review_state, ''),
		' ' order by event_id), '') from effects where consumer = 'billing'`).Scan(&s); err != nil {
		w.T.Fatal(err)
	}
	return s
}

// rowsDetail renders every billing row with its lease and last error, for a failure message.
func (w *world) rowsDetail() string {
	var s string
	if err := w.DB.QueryRow(context.Background(), `select coalesce(string_agg(event_id || ':' || state || ' calls=' || calls_started ||
		' attempts=' || attempts || coalesce(' lease=' || lease_owner, '') || coalesce(' error=' || last_error, ''), '; ' order by event_id), 'none')
		from effects where consumer = 'billing'`).Scan(&s); err != nil {
		return err.Error()
	}
	return s
}
