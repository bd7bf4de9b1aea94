package billing

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Records is what every instance of the billing service shares, in PostgreSQL: its orders table
// (which order each event is about, written before the charge is attempted) and the payment
// provider's charges as the provider itself would list them. The look-up answers from it, so two
// instances answer `replayctl reconcile` alike, and a restarted one still knows the events it
// handled. The tables are the example's own, created on open beside the ledger's; they are no
// part of replayctl's ledger or its migrations.
type Records struct {
	pool    *pgxpool.Pool
	orders  batcher[orderRow]
	charges batcher[chargeRow]
}

type orderRow struct{ eventID, orderID string }

type chargeRow struct {
	Charge
	currency string
}

// Charge is one charge the provider made.
type Charge struct {
	ID         string
	OrderID    string
	TotalCents int64
	// OperationID is the caller's reference of the charge (an API request's idempotency
	// operation ID), by which the provider can be asked whether it charged; empty for events.
	OperationID string
}

const recordsSchema = `
create table if not exists billing_orders (
    event_id text primary key,
    order_id text not null
);
create table if not exists billing_provider_charges (
    charge_id   text        primary key,
    order_id    text        not null,
    total_cents bigint      not null,
    currency    text        not null,
    charged_at  timestamptz not null default now()
);
create index if not exists billing_provider_charges_order on billing_provider_charges (order_id);
alter table billing_provider_charges add column if not exists operation_id text;
drop index if exists billing_provider_charges_operation;
-- The provider's idempotency: one charge per operation ID, and one per order among the charges
-- made under one (the API's), whatever the operation.
create unique index if not exists billing_provider_charges_operation_once on billing_provider_charges (operation_id) where operation_id is not null;
create unique index if not exists billing_provider_charges_api_order_once on billing_provider_charges (order_id) where operation_id is not null;`

const (
	// ordersInsert writes the rows of concurrent callers at once (batch.go); an event ID is at
	// most once in it (an upsert may not touch a row twice in one statement).
	ordersInsert = `insert into billing_orders (event_id, order_id)
select * from unnest($1::text[], $2::text[])
on conflict (event_id) do update set order_id = excluded.order_id`
	ordersGet     = `select order_id from billing_orders where event_id = $1`
	chargesInsert = `insert into billing_provider_charges (charge_id, order_id, total_cents, currency, operation_id)
select * from unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::text[])`
	chargeOnce = `insert into billing_provider_charges (charge_id, order_id, total_cents, currency, operation_id)
values ($1, $2, $3, $4, $5) on conflict do nothing`
	// chargeFirst is the charge that kept chargeOnce from inserting: the operation's own first,
	// else the order's under another operation.
	chargeFirst = `select charge_id, order_id, total_cents, operation_id from billing_provider_charges
 where operation_id = $1 or (order_id = $2 and operation_id is not null)
 order by operation_id = $1 desc limit 1`
	chargesOfOrder     = `select charge_id, order_id, total_cents, coalesce(operation_id, '') from billing_provider_charges where order_id = $1 order by charged_at, charge_id`
	chargesOfOperation = `select charge_id, order_id, total_cents, coalesce(operation_id, '') from billing_provider_charges where operation_id = $1 order by charged_at, charge_id`
)

// OpenRecords connects to databaseURL and creates the example's tables if they are missing.
func OpenRecords(ctx context.Context, databaseURL string) (*Records, error) {
	pool, err := pgxpool.New(ctx, databaseURL)
	if err != nil {
		return nil, fmt.Errorf("billing records: %w", err)
	}
	// Two instances starting at once may both create the tables; the advisory lock orders them.
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `select pg_advisory_xact_lock(hashtext('billing_records_schema'))`); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, recordsSchema)
		return err
	})
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("billing records: create the example's tables: %w", err)
	}
	r := &Records{pool: pool}
	r.orders.send, r.charges.send = r.insertOrders, r.insertCharges
	return r, nil
}

// Close closes the connections.
func (r *Records) Close() { r.pool.Close() }

// RecordOrder keeps which order eventID is about, as the service does before it charges; the
// look-up reads it. The conformance kit writes it for an event it has a tombstone made of.
func (r *Records) RecordOrder(ctx context.Context, eventID, orderID string) error {
	if err := r.orders.write(ctx, orderRow{eventID, orderID}); err != nil {
		return fmt.Errorf("record the order of event %s: %w", eventID, err)
	}
	return nil
}

func (r *Records) insertOrders(ctx context.Context, rows []orderRow) error {
	// The last order recorded for an event wins, as it would one statement at a time.
	last := make(map[string]int, len(rows))
	for i, o := range rows {
		last[o.eventID] = i
	}
	events, orders := make([]string, 0, len(last)), make([]string, 0, len(last))
	for i, o := range rows {
		if last[o.eventID] == i {
			events, orders = append(events, o.eventID), append(orders, o.orderID)
		}
	}
	_, err := r.pool.Exec(ctx, ordersInsert, events, orders)
	return err
}

func (r *Records) orderOf(ctx context.Context, eventID string) (string, bool, error) {
	var orderID string
	err := r.pool.QueryRow(ctx, ordersGet, eventID).Scan(&orderID)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("read the order of event %s: %w", eventID, err)
	}
	return orderID, true, nil
}

func (r *Records) recordCharge(ctx context.Context, c Charge, currency string) error {
	if err := r.charges.write(ctx, chargeRow{c, currency}); err != nil {
		return fmt.Errorf("payment provider: record charge %s of order %s: %w", c.ID, c.OrderID, err)
	}
	return nil
}

func (r *Records) insertCharges(ctx context.Context, rows []chargeRow) error {
	ids, orders, totals, currencies := make([]string, len(rows)), make([]string, len(rows)), make([]int64, len(rows)), make([]string, len(rows))
	operations := make([]*string, len(rows))
	for i, c := range rows {
		ids[i], orders[i], totals[i], currencies[i] = c.ID, c.OrderID, c.TotalCents, c.currency
		if c.OperationID != "" {
			operations[i] = &c.OperationID
		}
	}
	_, err := r.pool.Exec(ctx, chargesInsert, ids, orders, totals, currencies, operations)
	return err
}

// chargeOnce makes c unless its operation or, under another operation, its order was charged
// before, and returns the charge that stands: c, or the first.
func (r *Records) chargeOnce(ctx context.Context, c Charge, currency string) (Charge, error) {
	tag, err := r.pool.Exec(ctx, chargeOnce, c.ID, c.OrderID, c.TotalCents, currency, c.OperationID)
	if err != nil {
		return Charge{}, fmt.Errorf("payment provider: charge order %s: %w", c.OrderID, err)
	}
	if tag.RowsAffected() == 1 {
		return c, nil
	}
	// The conflicting row committed before the insert gave up on it: a new statement sees it.
	var first Charge
	err = r.pool.QueryRow(ctx, chargeFirst, c.OperationID, c.OrderID).Scan(&first.ID, &first.OrderID, &first.TotalCents, &first.OperationID)
	if err != nil {
		return Charge{}, fmt.Errorf("payment provider: read the first charge of order %s: %w", c.OrderID, err)
	}
	return first, nil
}

// ChargesOf lists the provider's charges of orderID, oldest first.
func (r *Records) ChargesOf(ctx context.Context, orderID string) ([]Charge, error) {
	return r.listCharges(ctx, chargesOfOrder, orderID, "order")
}

// ChargesOfOperation lists the provider's charges made under operationID, oldest first.
func (r *Records) ChargesOfOperation(ctx context.Context, operationID string) ([]Charge, error) {
	return r.listCharges(ctx, chargesOfOperation, operationID, "operation")
}

func (r *Records) listCharges(ctx context.Context, query, id, what string) ([]Charge, error) {
	rows, err := r.pool.Query(ctx, query, id)
	if err != nil {
		return nil, fmt.Errorf("list the charges of %s %s: %w", what, id, err)
	}
	charges, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Charge, error) {
		var c Charge
		err := row.Scan(&c.ID, &c.OrderID, &c.TotalCents, &c.OperationID)
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("list the charges of %s %s: %w", what, id, err)
	}
	return charges, nil
}
