package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/replayctl/replayctl/dlq"
	"github.com/replayctl/replayctl/fingerprint"
	"github.com/replayctl/replayctl/internal/billing"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/protocol"
)

// The ledger row states the rules wait for (docs/ledger.md).
const (
	stateCompleted  = "completed"
	stateUncertain  = "uncertain"
	stateReconciled = "reconciled"
)

var rules = []Rule{
	{Name: "duplicate-delivery", Says: "the same event delivered twice makes one external call and one completed row", check: duplicateDelivery},
	{Name: "changed-payload-conflict", Says: "a completed event arriving with another payload is a conflict: no call, the row untouched", check: changedPayload},
	{Name: "live-lease-waits", Says: "a delivery while another instance holds a live lease makes no call until the lease lapses", check: liveLeaseWaits},
	{Name: "lapsed-lease-after-call-uncertain", Says: "a lapsed lease whose holder had started a call becomes uncertain and is never run again", check: lapsedAfterCall},
	{Name: "bumped-version-runs-once", Says: "a replay under a registered higher version runs once, recorded under that version and job", check: bumpedVersion},
	{Name: "unregistered-version-refused", Says: "a replay under a version not registered as executing is refused: no call, no row", check: unregisteredVersion},
	{Name: "shadow-no-call-no-row", Says: "a shadow request is answered in the reply format, with no external call and no ledger write", check: shadowRequest},
	{Name: "request-fingerprint", Says: "the stored request hash is the shared fingerprint of the payload under the row's algorithm", check: requestFingerprint},
	{Name: "expired-evidence-looks-up", Says: "a late copy of an event whose evidence window ended goes to the look-up (reconciled, or uncertain for a person), never run again", check: expiredLooksUp},
	{Name: "expired-not-happened-runs-once", Says: "a late copy of a tombstoned event the look-up says never happened runs once, as a new event", check: expiredNotHappened},
	{Name: "lookup-answers", Says: "a look-up request on replay.reconcile.billing is answered from the provider's records, in the reply format", check: lookupAnswers},
	{Name: "business-failure-recorded", Says: "a terminal business failure is recorded once as a completed business outcome with an {\"error\"} result, no call, no retry, no dead letter", check: businessFailure},
	{Name: "reconcile-worker", Says: "a row left uncertain is asked about by the consumer's own reconcile worker and, the look-up saying happened, settled reconciled with no second call", check: reconcileWorker},
	{Name: "sealed-result-body", Says: "given a keyring, the consumer stores each result body sealed (AES-256-GCM, bound to its row), with the result hash over the plaintext", check: sealedResult},
	{Name: "invalid-dead-lettered", Says: "a message with an invalid replay header is dead-lettered with the DLQ headers and its payload unchanged", check: invalidDeadLettered},
	// Last: the killed instance's message stays unacknowledged until the durable's ack wait ends,
	// which would hold up the acknowledgement floor the other rules wait on.
	{Name: "kill-mid-call-uncertain", Says: "a consumer killed (SIGKILL) while its external call is in flight had marked the call started, and the event ends uncertain, never run again", check: killMidCall},
}

func order(eventID string, cents int64) []byte {
	b, _ := json.Marshal(billing.Order{OrderID: "order-" + eventID, Customer: "conformance", AmountCents: cents, Currency: "EUR"})
	return b
}

// wantCharges fails unless orderID has exactly n charges.
func (e *Env) wantCharges(ctx context.Context, eventID string, n int) error {
	got, err := e.charges(ctx, "order-"+eventID)
	if err != nil {
		return err
	}
	if got != n {
		return fmt.Errorf("the provider charged order-%s %d times, want %d", eventID, got, n)
	}
	return nil
}

// completeOnce publishes eventID once and waits for its completed row.
func (e *Env) completeOnce(ctx context.Context, eventID string, cents int64) error {
	if _, err := e.publish(ctx, eventID, order(eventID, cents), nil); err != nil {
		return err
	}
	_, err := e.waitRow(ctx, eventID, 1, stateCompleted)
	return err
}

func duplicateDelivery(ctx context.Context, e *Env) error {
	id := e.event("dup")
	if err := e.completeOnce(ctx, id, 100); err != nil {
		return err
	}
	if err := e.deliver(ctx, id, order(id, 100), nil); err != nil {
		return err
	}
	if err := e.wantRows(ctx, id, 1); err != nil {
		return err
	}
	return e.wantCharges(ctx, id, 1)
}

func changedPayload(ctx context.Context, e *Env) error {
	id := e.event("conflict")
	if err := e.completeOnce(ctx, id, 100); err != nil {
		return err
	}
	before, err := e.row(ctx, id, 1)
	if err != nil {
		return err
	}
	if err := e.deliver(ctx, id, order(id, 99_900), nil); err != nil {
		return err
	}
	after, err := e.row(ctx, id, 1)
	if err != nil {
		return err
	}
	if after == nil || after.RequestHash != before.RequestHash || after.State != stateCompleted {
		return fmt.Errorf("the row of %s changed after the conflicting payload: %+v", id, after)
	}
	return e.wantCharges(ctx, id, 1)
}

// claimAsAnotherInstance writes the claim a crashed or slow instance left on eventID, with calls
// started before it stopped, through the ledger's own statements.
func (e *Env) claimAsAnotherInstance(ctx context.Context, eventID string, payload []byte, lease time.Duration, calls int) error {
	key := ledger.EffectKey{Consumer: ConsumerName, EventID: eventID, EffectVersion: 1}
	owner := "conformance-other-instance"
	ok, err := ledger.EffectsClaim(ctx, e.Seed, ledger.EffectClaim{Key: key, RequestHash: fingerprint.Payload(payload),
		RequestHashAlg: fingerprint.Algorithm, Owner: owner, Lease: lease})
	if err != nil || !ok {
		return fmt.Errorf("claim %s as another instance: %t, %v", eventID, ok, err)
	}
	for n := range calls {
		if ok, err := ledger.EffectsCallStarted(ctx, e.Seed, key, owner, n+1); err != nil || !ok {
			return fmt.Errorf("mark %s's call started as another instance: %t, %v", eventID, ok, err)
		}
	}
	return nil
}

func liveLeaseWaits(ctx context.Context, e *Env) error {
	id := e.event("lease")
	payload := order(id, 100)
	const lease = 3 * time.Second
	if err := e.claimAsAnotherInstance(ctx, id, payload, lease, 0); err != nil {
		return err
	}
	held := time.Now().Add(lease)
	if _, err := e.publish(ctx, id, payload, nil); err != nil {
		return err
	}
	for time.Until(held) > 300*time.Millisecond {
		if err := e.wantCharges(ctx, id, 0); err != nil {
			return fmt.Errorf("during the other instance's live lease: %w", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The lease lapsed with no call started: the redelivery may take the event over and run it.
	if _, err := e.waitRow(ctx, id, 1, stateCompleted); err != nil {
		return fmt.Errorf("after the lease lapsed: %w", err)
	}
	return e.wantCharges(ctx, id, 1)
}

func lapsedAfterCall(ctx context.Context, e *Env) error {
	id := e.event("lapsed")
	payload := order(id, 100)
	const lease = 500 * time.Millisecond
	if err := e.claimAsAnotherInstance(ctx, id, payload, lease, 1); err != nil {
		return err
	}
	time.Sleep(lease + 100*time.Millisecond) // the other instance died in its call
	if _, err := e.publish(ctx, id, payload, nil); err != nil {
		return err
	}
	if _, err := e.waitRow(ctx, id, 1, stateUncertain); err != nil {
		return err
	}
	return e.wantCharges(ctx, id, 0)
}

// replayHeaders are the headers execute sets on a replayed message.
func replayHeaders(job, eventID string, version int) map[string]string {
	return map[string]string{
		protocol.HeaderReplayJob: job, protocol.HeaderReplayMode: protocol.ModeExecute,
		protocol.HeaderReplayEffectVersion: strconv.Itoa(version), protocol.HeaderReplayWriteForbidden: "false",
		protocol.HeaderMsgID: job + ":" + eventID,
	}
}

// bumpedVersion replays an event that never completed (dead-lettered live) under a higher
// version registered for a job, as execute does: it runs once, under that version and job; the
// same replay delivered again, and a late live copy, make no second call.
func bumpedVersion(ctx context.Context, e *Env) error {
	id := e.event("bump")
	job := "conf-" + e.Run + "-job"
	version, err := e.Store.EffectVersionsMaxKnown(ctx, ConsumerName)
	if err != nil {
		return err
	}
	version = max(version, 1) + 1
	if err := ledger.EffectVersionsRegister(ctx, e.Seed, ConsumerName, version, ledger.EffectVersionExecuting, job, "conformance"); err != nil {
		return fmt.Errorf("register version %d for job %s: %w", version, job, err)
	}
	headers := replayHeaders(job, id, version)
	if _, err := e.publish(ctx, id, order(id, 100), headers); err != nil {
		return err
	}
	r, err := e.waitRow(ctx, id, version, stateCompleted)
	if err != nil {
		return err
	}
	if r.JobID != job {
		return fmt.Errorf("the row of %s under version %d names job %q, want %q", id, version, r.JobID, job)
	}
	// A redelivery of the replay (another message ID, so JetStream stores it) and a live copy.
	headers[protocol.HeaderMsgID] += ":again"
	for _, h := range []map[string]string{headers, nil} {
		if err := e.deliver(ctx, id, order(id, 100), h); err != nil {
			return err
		}
	}
	if err := e.wantRows(ctx, id, 1); err != nil {
		return err
	}
	return e.wantCharges(ctx, id, 1)
}

func unregisteredVersion(ctx context.Context, e *Env) error {
	id := e.event("unregistered")
	if err := e.deliver(ctx, id, order(id, 100), replayHeaders("conf-"+e.Run+"-nojob", id, 2_000_000)); err != nil {
		return err
	}
	if err := e.wantRows(ctx, id, 0); err != nil {
		return err
	}
	return e.wantCharges(ctx, id, 0)
}

func shadowRequest(ctx context.Context, e *Env) error {
	id := e.event("shadow")
	msg := nats.NewMsg(protocol.ShadowSubject(ConsumerName))
	msg.Data = order(id, 100)
	for k, v := range map[string]string{protocol.HeaderEventID: id, protocol.HeaderReplayJob: "conf-" + e.Run + "-shadow",
		protocol.HeaderReplayMode: protocol.ModeShadow, protocol.HeaderReplayEffectVersion: "2", protocol.HeaderReplayWriteForbidden: "false"} {
		msg.Header.Set(k, v)
	}
	reply, err := e.NC.RequestMsgWithContext(ctx, msg)
	if err != nil {
		return fmt.Errorf("shadow request: %w", err)
	}
	var r protocol.ShadowReply
	if err := json.Unmarshal(reply.Data, &r); err != nil {
		return fmt.Errorf("the shadow reply is not the reply format: %w: %.200s", err, reply.Data)
	}
	if r.EventID != id || r.Status != "ok" || len(r.Result) == 0 || r.ResultHash != fingerprint.Payload(r.Result) {
		return fmt.Errorf("shadow reply %+v: want eventId %s, status ok, a result and resultHash the fingerprint of result", r, id)
	}
	if len(r.Effects) == 0 {
		return fmt.Errorf("the shadow reply lists no effects; the handler would charge")
	}
	for _, fx := range r.Effects {
		if !fx.Suppressed {
			return fmt.Errorf("the shadow reply's effect %+v is not suppressed", fx)
		}
	}
	// A call or a row would be written before the reply; a moment more for a late one.
	time.Sleep(200 * time.Millisecond)
	if err := e.wantRows(ctx, id, 0); err != nil {
		return err
	}
	return e.wantCharges(ctx, id, 0)
}

func requestFingerprint(ctx context.Context, e *Env) error {
	id := e.event("fingerprint")
	// The same order as another producer might write it: members reordered, white space, an
	// escaped character. The fingerprint is over the canonical form, not these bytes.
	payload := fmt.Appendf(nil, "{ \"currency\" : \"EUR\",\n \"amountCents\": 1.0e2, \"orderId\": \"order-%s\", \"customer\": \"conf\\u006frmance\" }", id)
	if _, err := e.publish(ctx, id, payload, nil); err != nil {
		return err
	}
	r, err := e.waitRow(ctx, id, 1, stateCompleted)
	if err != nil {
		return err
	}
	known, err := e.Store.FingerprintAlgorithms(ctx, ConsumerName)
	if err != nil {
		return err
	}
	var opts []fingerprint.Options
	for _, k := range known {
		if o, err := fingerprint.ParseOptions(k.Options); err == nil {
			opts = append(opts, o)
		}
	}
	h, err := fingerprint.Resolve(r.RequestHashAlg, opts...)
	if err != nil {
		return fmt.Errorf("the row's algorithm %q is neither canonical-json-v1 nor a v2 the consumer registered: %w", r.RequestHashAlg, err)
	}
	if want := h.Sum(payload); r.RequestHash != want {
		return fmt.Errorf("request hash %s under %s, want %s (fingerprint/testdata/vectors.json)", r.RequestHash, r.RequestHashAlg, want)
	}
	return nil
}

func invalidDeadLettered(ctx context.Context, e *Env) error {
	id := e.event("invalid")
	payload := order(id, 100)
	headers := replayHeaders("conf-"+e.Run+"-invalid", id, 2)
	headers[protocol.HeaderReplayWriteForbidden] = "perhaps"
	sub, err := e.NC.SubscribeSync(DLQSubject)
	if err != nil {
		return err
	}
	defer func() { _ = sub.Unsubscribe() }()
	if _, err := e.publish(ctx, id, payload, headers); err != nil {
		return err
	}
	for {
		m, err := sub.NextMsgWithContext(ctx)
		if err != nil {
			return fmt.Errorf("no dead letter of %s on %s: %w", id, DLQSubject, err)
		}
		if m.Header.Get(dlq.HeaderEventID) != id {
			continue
		}
		if string(m.Data) != string(payload) {
			return fmt.Errorf("the dead letter's payload changed: %.200s", m.Data)
		}
		if m.Header.Get(dlq.HeaderReason) == "" || m.Header.Get(dlq.HeaderOriginalSubject) != LiveSubject {
			return fmt.Errorf("the dead letter's headers %v: want %s and %s: %s", m.Header, dlq.HeaderReason, dlq.HeaderOriginalSubject, LiveSubject)
		}
		return e.wantCharges(ctx, id, 0)
	}
}

// expiredLooksUp has an event charged long ago whose row prune has turned into a tombstone (its
// evidence window over): a late copy must not be run on the tombstone's word, but asked of the
// look-up, which finds the provider's charge.
func expiredLooksUp(ctx context.Context, e *Env) error {
	id := e.event("expired")
	payload := order(id, 100)
	// The provider's own record of that charge, which the look-up reads.
	if err := e.chargedBefore(ctx, id, 100); err != nil {
		return err
	}
	if err := e.tombstone(ctx, id, payload); err != nil {
		return err
	}
	if err := e.deliver(ctx, id, payload, nil); err != nil {
		return err
	}
	// The look-up's answer: reconciled when it finds the charge, uncertain (a person decides) when
	// it cannot tell; the billing look-up finds no order recorded for this event, so says unknown.
	if _, err := e.waitRow(ctx, id, 1, ledger.EffectReconciled, stateUncertain); err != nil {
		return err
	}
	return e.wantCharges(ctx, id, 1)
}

// tombstone imports an old completed row of eventID, as an operator imports a service's history
// (`replayctl ledger import`), with its evidence window over, and prunes it into a tombstone.
func (e *Env) tombstone(ctx context.Context, eventID string, payload []byte) error {
	processed, past := time.Now().Add(-30*24*time.Hour), time.Now().Add(-48*time.Hour)
	if _, err := e.Store.ImportEffects(ctx, ConsumerName, "conformance", []ledger.ImportedEffect{{EventID: eventID, EffectVersion: 1,
		State: stateCompleted, RequestHash: fingerprint.Payload(payload), RequestHashAlg: fingerprint.Algorithm, EffectCount: 2,
		ProcessedAt: processed, ReplayUntil: &past, EvidenceUntil: &past}}, false); err != nil {
		return fmt.Errorf("import %s's old row: %w", eventID, err)
	}
	if _, err := e.Store.Prune(ctx, ledger.PruneOptions{Consumer: ConsumerName, Actor: "conformance"}); err != nil {
		return fmt.Errorf("prune %s's row into a tombstone: %w", eventID, err)
	}
	if r, err := e.row(ctx, eventID, 1); err != nil || r == nil || r.State != ledger.EffectExpired {
		return fmt.Errorf("%s's row after prune: %+v, %v; want a tombstone", eventID, r, err)
	}
	return nil
}

// expiredNotHappened has a tombstone of an event whose order the service knows but the provider
// never charged (the old row's evidence outlived the charge's): the look-up says not happened, and
// the late copy runs once as a new event.
func expiredNotHappened(ctx context.Context, e *Env) error {
	id := e.event("reopened")
	payload := order(id, 100)
	if err := e.Records.RecordOrder(ctx, id, "order-"+id); err != nil {
		return err
	}
	if err := e.tombstone(ctx, id, payload); err != nil {
		return err
	}
	if _, err := e.publish(ctx, id, payload, nil); err != nil {
		return err
	}
	if _, err := e.waitRow(ctx, id, 1, stateCompleted); err != nil {
		return fmt.Errorf("the tombstone was not reopened and run: %w", err)
	}
	// A copy more: the reopened row's completion settles it.
	if err := e.deliver(ctx, id, payload, nil); err != nil {
		return err
	}
	return e.wantCharges(ctx, id, 1)
}

// lookupAnswers asks the consumer's look-up responder, as `replayctl reconcile` does, about an
// event it charged once: the answer is happened, with the charge's reference.
func lookupAnswers(ctx context.Context, e *Env) error {
	id := e.event("lookup")
	if err := e.completeOnce(ctx, id, 100); err != nil {
		return err
	}
	r, err := e.row(ctx, id, 1)
	if err != nil || r == nil {
		return fmt.Errorf("%s's row: %+v, %v", id, r, err)
	}
	req, _ := json.Marshal(protocol.ReconcileRequest{Consumer: ConsumerName, EventID: id, EffectVersion: 1,
		RequestHash: r.RequestHash, RequestHashAlg: r.RequestHashAlg, ExternalRefs: []protocol.Effect{}, CallsStarted: 1})
	msg, err := e.NC.RequestWithContext(ctx, protocol.ReconcileSubject(ConsumerName), req)
	if err != nil {
		return fmt.Errorf("look-up request: %w", err)
	}
	var reply protocol.ReconcileReply
	if err := json.Unmarshal(msg.Data, &reply); err != nil {
		return fmt.Errorf("the look-up reply is not the reply format: %w: %.200s", err, msg.Data)
	}
	if reply.EventID != id || reply.Verdict != protocol.VerdictHappened {
		return fmt.Errorf("look-up reply %+v: want eventId %s, verdict happened (the provider charged it once)", reply, id)
	}
	for _, ref := range reply.ExternalRefs {
		if ref.Ref != "" {
			return nil
		}
	}
	return fmt.Errorf("look-up reply %+v names no reference of the charge", reply)
}
