package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/replayctl/replayctl/internal/billing"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/manifest"
	"github.com/replayctl/replayctl/planner"
	"github.com/replayctl/replayctl/protocol"
	"github.com/replayctl/replayctl/shadow"
)

// backfillEvents is how many of the history's orders, completed live under version 1 with its
// truncated fee, the backfill phase re-processes from their original messages.
const backfillEvents = 200

// backfillSubject is where the demo's producer published the originals, inside the billing stream.
const backfillSubject = "billing.charge.history"

// Backfill is the backfill phase: the write-forbidden plan of the history's originals and its
// shadow, which must find exactly the orders whose fee the fix changes.
type Backfill struct {
	Plan *planner.Result
	// Changed counts, by construction, the backfilled orders whose fee version 2 rounds
	// differently or whose recorded calls differ from the shadow's.
	Changed, ExpectedCalls int64
	Shadow                 *shadow.Report
	ShadowReportPath       string
	ProviderCalls          int64
}

func historyEventID(h int) string { return fmt.Sprintf("hist-%06d", h) }

// backfillJob publishes the originals of the first backfillEvents history orders, plans a
// write-forbidden backfill of them under the next version and shadows it.
func backfillJob(ctx context.Context, nc *nats.Conn, js jetstream.JetStream, store *ledger.Store, opts Options, sc Scenario) (*Backfill, error) {
	b := &Backfill{}
	for h := range min(backfillEvents, sc.History) {
		msg := nats.NewMsg(backfillSubject)
		msg.Data = payload(1_000_000+h, 0)
		msg.Header.Set(protocol.HeaderEventID, historyEventID(h))
		if _, err := js.PublishMsg(ctx, msg); err != nil {
			return nil, fmt.Errorf("demo: publish the original of %s: %w", historyEventID(h), err)
		}
		// One history row in 50 recorded only the charge (its mailer was down): the shadow's two
		// calls change it as well, whatever its fee.
		amount := order(1_000_000+h, 0).AmountCents
		mailerDown := h%50 == 0
		if mailerDown || billing.FeeCents(amount, liveVersion) != billing.FeeCents(amount, billing.FixedVersion) {
			b.Changed++
		}
		b.ExpectedCalls += int64(billingEffects - btoi(mailerDown))
	}
	res, err := planner.Plan(ctx, js, store, planner.Options{
		Consumer: sc.Consumer, Stream: billingStream, SubjectFilter: backfillSubject, Backfill: true, WriteForbidden: true,
		Reason:     "fee rounding fixed in version 2 (INC-4533): recompute the receipts version 1 truncated",
		Ticket:     "INC-4533",
		OutputPath: filepath.Join(opts.Dir, "backfill.json"),
		Actor:      opts.Actor,
		Now:        opts.Now,
		Stage:      opts.Stage,
	})
	if err != nil {
		return nil, err
	}
	b.Plan = res
	opts.Step("planned backfill %s of %d orders completed under version 1, from stream %s (%s), write-forbidden",
		res.Manifest.ID, res.Manifest.Stats.Targets, billingStream, backfillSubject)
	b.ShadowReportPath = filepath.Join(opts.Dir, "backfill.shadow.json")
	if b.Shadow, b.ProviderCalls, err = shadowManifest(ctx, nc, js, store, opts, res.Manifest, b.ShadowReportPath); err != nil {
		return nil, err
	}
	return b, nil
}

// CompareBackfill lists every figure of the backfill phase that differs from the truth: every
// history order is a target, charged its recorded calls, and the shadow finds exactly the
// changed fees against the version 1 results, processedAt as noise.
func CompareBackfill(b *Backfill) []string {
	var out []string
	check := func(field string, want, got any) {
		if !reflect.DeepEqual(want, got) {
			out = append(out, fmt.Sprintf("backfill %s: expected %v, got %v", field, want, got))
		}
	}
	m := b.Plan.Manifest
	n := int64(backfillEvents)
	check("source kind", manifest.SourceBackfill, m.SourceKind())
	check("targets", n, m.Stats.Targets)
	check("previousOutcomes", map[string]int64{"v1 completed": n}, m.Stats.PreviousOutcomes)
	check("expectedExternalCalls", b.ExpectedCalls, m.ExpectedExternalCalls)
	t := b.Shadow.Totals
	check("provider calls during the shadow pass", int64(0), b.ProviderCalls)
	check("shadow changed", b.Changed, t.Changed)
	check("shadow identical", n-b.Changed, t.Identical)
	check("shadow noOriginal", int64(0), t.NoOriginal)
	fields := map[string]shadow.FieldSummary{}
	for _, f := range b.Shadow.Fields {
		fields[f.Path] = f
	}
	if fields["feeCents"].Changed == 0 {
		out = append(out, "backfill shadow sample: feeCents, the field the fix changes, is not reported changed")
	}
	if fields["processedAt"].Noise == 0 {
		out = append(out, "backfill shadow sample: processedAt, a timestamp, is not reported as noise")
	}
	return out
}

// MarshalJSON is the backfill phase as `demo --json` prints it: IDs and counts, no manifest.
func (b *Backfill) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		JobID         string        `json:"jobId"`
		Targets       int64         `json:"targets"`
		Changed       int64         `json:"changed"`
		ProviderCalls int64         `json:"providerCallsDuringShadow"`
		Totals        shadow.Totals `json:"shadowTotals"`
	}{b.Plan.Manifest.ID, b.Plan.Manifest.Stats.Targets, b.Changed, b.ProviderCalls, b.Shadow.Totals})
}
