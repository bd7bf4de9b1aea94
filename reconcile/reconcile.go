// Package reconcile settles uncertain ledger rows: rows whose external write may have happened
// but whose outcome is unknown, which the SDK never retries. It lists a consumer's uncertain rows
// and its stuck leases with a call started (ledger.StuckLeaseAfter), asks the consumer's look-up
// responder (replay.reconcile.<consumer>) about each one, and applies the verdicts: happened
// makes the row reconciled (the effect exists; it is never replayed), not_happened and unknown
// make or keep it uncertain, marked for manual review. Nothing is ever made
// retryable here: a look-up saying "not charged" may itself be wrong (a charge still settling).
package reconcile

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/protocol"
)

// Page sizes: rows are listed and verdicts applied in batches, never one round trip per row.
const (
	listPage   = 500
	applyBatch = 500
)

// Run reconciles o.Consumer's uncertain rows and reports what it found and did. Nothing is
// written before every look-up was asked, and nothing at all on a dry run, without a responder
// (ErrNoResponder), when the responder stops answering (ErrUnanswered) or without confirmation
// (ErrNotConfirmed, with the report of the verdicts). A row that changed between list and apply
// is left alone and reported as such.
func Run(ctx context.Context, nc *nats.Conn, store Ledger, o Options) (*Report, error) {
	if err := o.Normalise(); err != nil {
		return nil, err
	}
	if err := store.CheckSchema(ctx); err != nil {
		return nil, err
	}
	r := &Report{RunID: newRunID("reconcile"), Consumer: o.Consumer, JobID: o.JobID, DryRun: o.DryRun,
		Subject: protocol.ReconcileSubject(o.Consumer), Rows: []Row{}}
	if o.OlderThan > 0 {
		r.OlderThan = o.OlderThan.String()
	}
	o.stage("listing the uncertain ledger rows of consumer %s", o.Consumer)
	listed, err := list(ctx, store, o, r)
	if err != nil {
		return nil, err
	}
	if len(listed) == 0 {
		r.total()
		return r, nil
	}
	o.stage("asking %s about %d rows", r.Subject, len(listed))
	if err := askAll(ctx, nc, o, listed, r); err != nil {
		return nil, err
	}
	r.total()
	if r.Totals.Unanswered == r.Totals.Listed {
		return nil, fmt.Errorf("%w: none of the %d look-ups on %s got a usable reply (first: %s); nothing was changed",
			ErrUnanswered, len(r.Rows), r.Subject, r.Rows[0].Error)
	}
	if o.DryRun {
		return r, nil
	}
	if o.Confirm != nil {
		ok, err := o.Confirm(r)
		if err != nil {
			return r, err
		}
		if !ok {
			return r, fmt.Errorf("%w: the verdicts for consumer %s were not applied, nothing was changed; "+
				"on a terminal type the consumer name, in CI pass --yes", ErrNotConfirmed, o.Consumer)
		}
	}
	o.stage("applying %d verdicts", r.Totals.Listed-r.Totals.Unanswered)
	if err := apply(ctx, store, o, r); err != nil {
		return r, err
	}
	return r, nil
}

// list reads up to o.Max matching rows in keyset pages, plus one to tell whether more match: the
// uncertain rows, then the stuck leases with a call started (uncertain in all but name, and
// otherwise never looked at again).
func list(ctx context.Context, store Ledger, o Options, r *Report) ([]ledger.UncertainRow, error) {
	var out []ledger.UncertainRow
	for _, stuck := range []bool{false, true} {
		f := ledger.UncertainFilter{Consumer: o.Consumer, JobID: o.JobID, OlderThan: o.OlderThan, Stuck: stuck, Due: o.Due}
		var after *ledger.UncertainCursor
		for len(out) <= o.Max {
			page, err := store.EffectsUncertainPage(ctx, f, after, min(listPage, o.Max+1-len(out)))
			if err != nil {
				return nil, err
			}
			out = append(out, page...)
			if len(page) == 0 || len(out) > o.Max {
				break
			}
			last := page[len(page)-1]
			after = &ledger.UncertainCursor{EventID: last.EventID, EffectVersion: last.EffectVersion}
		}
	}
	if len(out) > o.Max {
		r.Truncated, out = true, out[:o.Max]
	}
	return out, nil
}

// askAll asks about every row, o.Concurrency at once, and fills r.Rows in listing order.
func askAll(ctx context.Context, nc *nats.Conn, o Options, listed []ledger.UncertainRow, r *Report) error {
	a := &asker{nc: nc, consumer: o.Consumer, subject: r.Subject, timeout: o.Timeout}
	r.Rows = make([]Row, len(listed))
	return a.askEach(ctx, o.Concurrency, listed, func(i int, ans answer) { r.Rows[i] = rowOf(listed[i], ans) }, o.Progress)
}

// askEach asks about every row, concurrency at once, and hands each answer to got with the row's
// index. A missing responder or a failed connection stops it at once; so does a long run of
// unanswered requests, since a hung responder would otherwise cost the timeout per row.
func (a *asker) askEach(ctx context.Context, concurrency int, listed []ledger.UncertainRow, got func(int, answer),
	progress func(done, total int64)) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	maxUnanswered := int64(max(20, 2*concurrency))
	var done, unansweredRun atomic.Int64
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range concurrency {
		wg.Go(func() {
			for i := range jobs {
				ans, err := a.ask(ctx, listed[i])
				if err != nil {
					cancel(err)
					return
				}
				got(i, ans)
				if ans.err == "" {
					unansweredRun.Store(0)
				} else if unansweredRun.Add(1) > maxUnanswered {
					cancel(fmt.Errorf("%w: %d look-ups in a row on %s got no usable reply (last: %s); is the look-up of "+
						"consumer %s hung? nothing was changed", ErrUnanswered, maxUnanswered+1, a.subject, ans.err, a.consumer))
					return
				}
				if progress != nil {
					progress(done.Add(1), int64(len(listed)))
				}
			}
		})
	}
feed:
	for i := range listed {
		select {
		case jobs <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	return context.Cause(ctx)
}

// rowOf is a listed row with its look-up's answer and the outcome that answer leads to.
func rowOf(u ledger.UncertainRow, ans answer) Row {
	row := Row{EventID: u.EventID, EffectVersion: u.EffectVersion, JobID: u.JobID,
		UncertainForSeconds: u.Age.Seconds(), Calls: max(u.EffectCount, u.CallsStarted),
		ExternalRefs: u.ExternalRefs, LastError: u.LastError, PreviousVerdict: u.ReviewVerdict, StuckLease: u.Stuck,
		seenUpdatedAt: u.UpdatedAt, seenReviewedAt: u.ReviewedAt}
	if ans.err != "" {
		row.Outcome, row.Error = OutcomeUnanswered, ans.err
		return row
	}
	row.Verdict, row.Detail, row.FoundRefs = ans.reply.Verdict, ans.reply.Detail, ans.reply.ExternalRefs
	row.Outcome = OutcomeWouldReview
	if row.Verdict == protocol.VerdictHappened {
		row.Outcome = OutcomeWouldReconcile
	}
	return row
}

// apply writes the answered rows' verdicts in batches and records the run in the audit log. A
// verdict the ledger did not take (its row changed since it was listed) is reported, not retried.
func apply(ctx context.Context, store Ledger, o Options, r *Report) error {
	type key struct {
		event   string
		version int
	}
	index := map[key]int{}
	var verdicts []ledger.ReconcileVerdict
	for i, row := range r.Rows {
		if row.Outcome == OutcomeUnanswered {
			continue
		}
		found, err := json.Marshal(row.FoundRefs)
		if err != nil {
			return fmt.Errorf("encode the references found for event %q: %w", row.EventID, err)
		}
		index[key{row.EventID, row.EffectVersion}] = i
		verdicts = append(verdicts, ledger.ReconcileVerdict{EventID: row.EventID, EffectVersion: row.EffectVersion,
			Verdict: row.Verdict, FoundRefs: found, Note: row.Detail, SeenUpdatedAt: row.seenUpdatedAt,
			SeenReviewedAt: row.seenReviewedAt, Stuck: row.StuckLease})
		r.Rows[i].Outcome = OutcomeChanged
	}
	for start := 0; start < len(verdicts); start += applyBatch {
		batch := verdicts[start:min(start+applyBatch, len(verdicts))]
		applied, err := store.EffectsReconcileApply(ctx, ledger.ReconcileBatch{Consumer: o.Consumer, Actor: o.Actor,
			RunID: r.RunID, Verdicts: batch})
		if err != nil {
			r.total()
			return fmt.Errorf("%w; %d of %d verdicts were applied before it, each audited; run reconcile again for the rest",
				err, start, len(verdicts))
		}
		for _, a := range applied {
			i := index[key{a.EventID, a.EffectVersion}]
			r.Rows[i].Outcome = OutcomeManualReview
			if a.State == ledger.EffectReconciled {
				r.Rows[i].Outcome = OutcomeReconciled
			}
		}
	}
	r.Applied = true
	r.total()
	t := r.Totals
	return store.AuditInsert(ctx, ledger.AuditEntry{Actor: o.Actor, JobID: o.JobID, Action: ledger.AuditReconcileRun,
		Details: map[string]any{"run": r.RunID, "consumer": o.Consumer, "olderThan": r.OlderThan, "listed": t.Listed,
			"truncated": r.Truncated, "reconciled": t.Reconciled, "manualReview": t.ManualReview,
			"unanswered": t.Unanswered, "changedSinceListed": t.Changed}})
}

// newRunID names one run (kind reconcile or resolve) in the audit log, tying each row's entry to
// the run's.
func newRunID(kind string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return kind + "-" + time.Now().UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
}
