// Package demo seeds a realistic DLQ and ledger and runs replayctl's steps on them, for
// `replayctl demo` and the end-to-end tests. Every figure of the seed is known by construction, so
// the demo can prove the plan against the truth.
package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/replayctl/replayctl/dlq"
	"github.com/replayctl/replayctl/fingerprint"
	"github.com/replayctl/replayctl/internal/billing"
	"github.com/replayctl/replayctl/ledger"
)

// Scenario sizes the seed.
type Scenario struct {
	Consumer string
	Stream   string
	// Events is the number of distinct valid event IDs in the DLQ; at least 200.
	Events int
	// History is the number of the consumer's completed effects outside the DLQ.
	History int
	Now     time.Time
}

// DefaultScenario is the demo's seed: a billing consumer whose payment provider timed out.
func DefaultScenario(now time.Time) Scenario {
	return Scenario{Consumer: "billing", Stream: "DLQ_BILLING", Events: 5000, History: 10000, Now: now}
}

// Truth is what a plan of the whole seeded stream must find, by construction.
type Truth struct {
	Scanned, MissingEventID, InvalidEventID, Candidates                 int64
	RepeatedInSource, DuplicateInSource, LedgerPayloadMismatch          int64
	AlreadyCompleted, CompletedUnderOlderVersion                        int64
	ExcludedUncertain, ExcludedInFlight, Targets, ExpectedExternalCalls int64
	FailureReasons                                                      map[string]int64
	EffectVersionFrom                                                   int
	UncertainIDs, InFlightIDs, ConflictSourceIDs, ConflictLedgerIDs     []string
	// AlreadyCompletedIDs are the DLQ's events that succeeded on a later live retry: a DLQ
	// replay keeps them out, and execute must not charge them again.
	AlreadyCompletedIDs []string
}

// The first event indexes play the special roles; every other event is an ordinary failed charge.
const (
	conflictSourceEvents = 2 // published twice with different payloads
	repeatedEvents       = 3 // published twice with the same payload
	uncertainEvents      = 5 // ledger row uncertain
	lapsedLeaseEvents    = 2 // processing, lease expired: uncertain too
	inFlightEvents       = 3 // processing, lease live
	ledgerMismatchEvents = 2 // completed under v1 with a different request hash
	receivedEvents       = 5 // received, never leased: an ordinary target
	liveVersion          = 1
	// billingEffects is what the billing consumer does per order: a charge and a receipt. One
	// history row in 50 records only the charge (its mailer was down), so the plan's mean per
	// effect is just under 2.
	billingEffects = 2
)

var reasons = []string{
	"provider timeout after 20s", "provider timeout after 20s", "provider timeout after 20s", "provider timeout after 20s",
	"http 503 from payments-api", "http 503 from payments-api", "http 503 from payments-api",
	"deadline exceeded", "deadline exceeded",
	"schema validation: missing currency",
}

// EventID names event i of the seed.
func EventID(i int) string { return fmt.Sprintf("evt-%06d", i) }

// isCandidateTarget says whether a plan of the whole seed targets event i unless it completed
// before: every event but the source conflicts, and the uncertain, lapsed, in-flight and
// ledger-conflict rows that follow the repeats.
func isCandidateTarget(i int) bool {
	const firstLedgerExcluded = conflictSourceEvents + repeatedEvents
	const ledgerExcluded = uncertainEvents + lapsedLeaseEvents + inFlightEvents + ledgerMismatchEvents
	return i >= conflictSourceEvents && (i < firstLedgerExcluded || i >= firstLedgerExcluded+ledgerExcluded)
}

// OrderID is the billing order of event i: what the payment provider is charged for.
func OrderID(i int) string { return order(i, 0).OrderID }

// isCompletedBefore says whether ordinary event i succeeded on a later live retry under v1.
func isCompletedBefore(i int) bool { return i >= 100 && i%10 == 3 }

// order is the billing order of event i; a different variant is a different intent under the same ID.
func order(i, variant int) billing.Order {
	return billing.Order{
		OrderID:     fmt.Sprintf("ord-%06d", i),
		Customer:    fmt.Sprintf("cus_%04d", i%977),
		AmountCents: int64(500 + (i*37)%20000 + variant),
		Currency:    "EUR",
	}
}

func payload(i, variant int) []byte {
	b, _ := json.Marshal(order(i, variant))
	return b
}

// Seed creates the DLQ stream and the consumer's ledger rows of sc and returns the truth.
func Seed(ctx context.Context, js jetstream.JetStream, store *ledger.Store, sc Scenario) (Truth, error) {
	if sc.Events < 200 {
		return Truth{}, fmt.Errorf("demo seed needs at least 200 events, got %d", sc.Events)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{
		Name:      sc.Stream,
		Subjects:  []string{"dlq." + sc.Consumer + ".>"},
		Retention: jetstream.LimitsPolicy,
		Storage:   jetstream.FileStorage,
	}); err != nil {
		return Truth{}, fmt.Errorf("create DLQ stream %s: %w", sc.Stream, err)
	}
	truth := Truth{FailureReasons: map[string]int64{}, EffectVersionFrom: liveVersion}
	effects, err := seedLedger(ctx, store, sc, &truth)
	if err != nil {
		return Truth{}, err
	}
	if err := seedStream(ctx, js, sc, &truth); err != nil {
		return Truth{}, err
	}
	// Targets with a completed older effect are charged its effect_count; the rest the mean.
	meanPerEffect := math.Round(effects.meanEffectCount()*1000) / 1000
	truth.ExpectedExternalCalls = billingEffects*truth.CompletedUnderOlderVersion +
		int64(math.Ceil(float64(truth.Targets-truth.CompletedUnderOlderVersion)*meanPerEffect))
	return truth, nil
}

type effectTotals struct{ completed, calls int64 }

func (e effectTotals) meanEffectCount() float64 { return float64(e.calls) / float64(e.completed) }

func seedLedger(ctx context.Context, store *ledger.Store, sc Scenario, truth *Truth) (effectTotals, error) {
	var rows []ledger.EffectRow
	var totals effectTotals
	// Completed rows hold what the billing consumer's version 1 returned a day earlier.
	processedAt := sc.Now.Add(-24 * time.Hour)
	add := func(eventID string, state string, i, variant int, effectCount int, leaseExpires *time.Time) {
		e := ledger.EffectRow{Consumer: sc.Consumer, EventID: eventID, EffectVersion: liveVersion, State: state,
			RequestHash: fingerprint.Payload(payload(i, variant)), RequestHashAlg: fingerprint.Algorithm,
			EffectCount: effectCount, LeaseExpiresAt: leaseExpires}
		if state == "processing" {
			e.LeaseOwner = "billing-7f9c-" + eventID
		}
		if state == "completed" {
			body, _ := json.Marshal(billing.ReceiptFor(order(i, variant), liveVersion, processedAt))
			e.ResultHash = fingerprint.Payload(body)
			e.ResultBody = body
			totals.completed++
			totals.calls += int64(effectCount)
		}
		rows = append(rows, e)
	}
	for h := 0; h < sc.History; h++ {
		add(fmt.Sprintf("hist-%06d", h), "completed", 1_000_000+h, 0, billingEffects-btoi(h%50 == 0), nil)
	}
	lapsed, live := sc.Now.Add(-5*time.Minute), sc.Now.Add(2*time.Hour)
	i := conflictSourceEvents + repeatedEvents
	for n := 0; n < uncertainEvents; n, i = n+1, i+1 {
		add(EventID(i), "uncertain", i, 0, 0, nil)
		truth.UncertainIDs = append(truth.UncertainIDs, EventID(i))
	}
	for n := 0; n < lapsedLeaseEvents; n, i = n+1, i+1 {
		add(EventID(i), "processing", i, 0, 0, &lapsed)
		truth.UncertainIDs = append(truth.UncertainIDs, EventID(i))
	}
	for n := 0; n < inFlightEvents; n, i = n+1, i+1 {
		add(EventID(i), "processing", i, 0, 0, &live)
		truth.InFlightIDs = append(truth.InFlightIDs, EventID(i))
	}
	for n := 0; n < ledgerMismatchEvents; n, i = n+1, i+1 {
		add(EventID(i), "completed", i, 99, billingEffects, nil)
		truth.ConflictLedgerIDs = append(truth.ConflictLedgerIDs, EventID(i))
	}
	for n := 0; n < receivedEvents; n, i = n+1, i+1 {
		add(EventID(i), "received", i, 0, 0, nil)
	}
	for j := 100; j < sc.Events; j++ {
		if isCompletedBefore(j) {
			add(EventID(j), "completed", j, 0, billingEffects, nil)
		}
	}
	if _, err := store.EffectsImport(ctx, rows); err != nil {
		return totals, fmt.Errorf("seed ledger of consumer %s: %w", sc.Consumer, err)
	}
	return totals, nil
}

// seedStallWait is how long a seed publish waits for room among the unacknowledged ones.
const seedStallWait = 30 * time.Second

func seedStream(ctx context.Context, js jetstream.JetStream, sc Scenario, truth *Truth) error {
	var acks []jetstream.PubAckFuture
	pub := func(eventID *string, i, variant int, seq int) error {
		msg := nats.NewMsg(fmt.Sprintf("dlq.%s.charge", sc.Consumer))
		msg.Data = payload(i, variant)
		if eventID != nil {
			msg.Header.Set(dlq.DefaultHeaders.EventID, *eventID)
		}
		msg.Header.Set(dlq.DefaultHeaders.Reason, reasons[i%len(reasons)])
		msg.Header.Set(dlq.DefaultHeaders.OriginalSubject, "billing.charge.requested")
		msg.Header.Set(dlq.DefaultHeaders.Attempts, "5")
		msg.Header.Set(dlq.DefaultHeaders.FailedAt, sc.Now.Add(-time.Duration(sc.Events-seq)*time.Second).UTC().Format(time.RFC3339))
		// The default stall wait (200 ms) fails a seed on a busy machine while the server catches up.
		ack, err := js.PublishMsgAsync(msg, jetstream.WithStallWait(seedStallWait))
		if err != nil {
			return fmt.Errorf("seed DLQ message %d: %w", seq, err)
		}
		acks = append(acks, ack)
		truth.Scanned++
		return nil
	}
	for i := 0; i < conflictSourceEvents; i++ {
		truth.ConflictSourceIDs = append(truth.ConflictSourceIDs, EventID(i))
	}
	for i := 0; i < sc.Events; i++ {
		id := EventID(i)
		if err := pub(&id, i, 0, i); err != nil {
			return err
		}
		if i == sc.Events/2 {
			noID, badID := (*string)(nil), "evt-\xff\xfe"
			if err := pub(noID, i, 0, i); err != nil {
				return err
			}
			if err := pub(&badID, i, 0, i); err != nil {
				return err
			}
			truth.MissingEventID++
			truth.InvalidEventID++
		}
		if !isCandidateTarget(i) {
			continue
		}
		if isCompletedBefore(i) {
			truth.AlreadyCompleted++
			truth.AlreadyCompletedIDs = append(truth.AlreadyCompletedIDs, id)
			continue
		}
		truth.Targets++
		truth.FailureReasons[reasons[i%len(reasons)]]++
	}
	for i := 0; i < conflictSourceEvents; i++ {
		id := EventID(i)
		if err := pub(&id, i, 1, sc.Events); err != nil {
			return err
		}
	}
	for i := conflictSourceEvents; i < conflictSourceEvents+repeatedEvents; i++ {
		id := EventID(i)
		if err := pub(&id, i, 0, sc.Events); err != nil {
			return err
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-ctx.Done():
		return fmt.Errorf("seed DLQ: %w", ctx.Err())
	}
	for _, ack := range acks {
		select {
		case <-ack.Ok():
		case err := <-ack.Err():
			return fmt.Errorf("seed DLQ: publish of %s not acknowledged: %w", ack.Msg().Header.Get(dlq.DefaultHeaders.EventID), err)
		}
	}
	truth.Candidates = int64(sc.Events)
	truth.RepeatedInSource = repeatedEvents
	truth.DuplicateInSource = conflictSourceEvents
	truth.LedgerPayloadMismatch = ledgerMismatchEvents
	truth.ExcludedUncertain = uncertainEvents + lapsedLeaseEvents
	truth.ExcludedInFlight = inFlightEvents
	return nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
