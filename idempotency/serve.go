package idempotency

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/replayctl/replayctl/apikey"
	"github.com/replayctl/replayctl/fingerprint"
)

// retryShortly is Retry-After for a race a second later settles (a record between two states).
const retryShortly = time.Second

// reviewRetryAfter is Retry-After while a person or the reconcile worker settles a record.
const reviewRetryAfter = 5 * time.Minute

// request is one keyed request on its way through the middleware.
type request struct {
	rt    *route
	next  http.Handler
	w     http.ResponseWriter
	r     *http.Request
	body  []byte
	claim apikey.Claim
}

func (q *request) key() apikey.Key {
	return apikey.Key{ScopeHash: q.claim.ScopeHash, KeyHash: q.claim.KeyHash}
}

func (k *Keeper) answer(ctx context.Context, rt *route, kind problemKind, metric string, w http.ResponseWriter, detail, ref string, retryAfter time.Duration) {
	k.count(ctx, rt, metric)
	kind.write(w, detail, ref, retryAfter)
}

func (k *Keeper) serve(rt *route, next http.Handler, w http.ResponseWriter, r *http.Request) {
	rawKey, present, err := requestKey(r.Header)
	switch {
	case err != nil:
		k.answer(r.Context(), rt, problemInvalidKey, answerInvalidKey, w, fmt.Sprintf("send one %s of 1 to %d printable ASCII characters, e.g. a UUID", KeyHeader, maxKeyLength), "", 0)
		return
	case !present && rt.RequireKey:
		k.answer(r.Context(), rt, problemMissingKey, answerMissingKey, w, fmt.Sprintf("%s requires an %s header: a new unique value (a UUID) per intent, the same value on every retry of it", rt.name, KeyHeader), "", 0)
		return
	case !present:
		k.count(r.Context(), rt, answerNoKey)
		next.ServeHTTP(w, r)
		return
	}
	scope, err := k.cfg.Scope(r)
	if err != nil {
		k.answer(r.Context(), rt, problemUnauthenticated, answerUnauthorized, w, "", "", 0)
		return
	}
	// Before anything is read from the ledger: a revoked caller never gets a stored response.
	if k.cfg.Authorize != nil {
		if err := k.cfg.Authorize(r, scope); err != nil {
			k.answer(r.Context(), rt, problemForbidden, answerForbidden, w, "", "", 0)
			return
		}
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, k.cfg.MaxBody+1))
	if err != nil || int64(len(body)) > k.cfg.MaxBody {
		k.answer(r.Context(), rt, problemTooLarge, answerTooLarge, w, fmt.Sprintf("at most %d bytes", k.cfg.MaxBody), "", 0)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	q := &request{rt: rt, next: next, w: w, r: r, body: body, claim: apikey.Claim{
		ScopeHash: ScopeHash(scope, rt.name), KeyHash: HashKey(k.cfg.KeySecret, rawKey), Route: rt.name,
		ClientHash: ClientHash(scope), RequestHash: rt.hasher.Sum(body), RequestHashAlg: rt.hasher.Algorithm(),
		Owner: k.nextOwner(), Lease: k.cfg.Lease,
	}}
	k.counts.add(rt.name, q.claim.ClientHash, k.cfg.Now(), countRequest)
	traceKey(r.Context(), q.claim.KeyHash)
	claimed, rec, err := k.cfg.Store.APIKeysClaim(r.Context(), q.claim)
	if err != nil {
		// Fail closed: without the ledger nobody can tell a retry from a first request.
		k.cfg.Logger.Warn("idempotency: claim failed; answered 503", "route", rt.name, "key", apikey.ShortHash(q.claim.KeyHash), "err", err)
		k.answer(r.Context(), rt, problemUnavailable, answerUnavailable, w, "retry later with the same key", "", 30*time.Second)
		return
	}
	switch {
	case claimed:
		k.run(q)
	case rec.KeyHash == "":
		// The claim lost to a record that was gone when read back (pruned between the two):
		// nothing can be compared, and the retry claims afresh.
		k.answer(r.Context(), rt, problemInProgress, answerInProgress, w, "retry shortly", "", retryShortly)
	default:
		k.answerExisting(q, rec)
	}
}

// answerExisting answers a request whose key already has a record it could not claim.
func (k *Keeper) answerExisting(q *request, rec apikey.Record) {
	rt := q.rt
	windowClosed := (rec.State == apikey.StateCompleted && !rec.ReplayOpen) || rec.State == apikey.StateExpired
	if windowClosed && rt.ExpiredIsNew {
		k.runAsNew(q, rec)
		return
	}
	same, err := k.sameIntent(rt, rec, q.body)
	if !same {
		k.counts.add(rt.name, q.claim.ClientHash, k.cfg.Now(), countMismatch)
		detail := "send a new key for a new request; a retry must repeat the first request's body"
		if err != nil {
			detail = "the first request's fingerprint was made by an algorithm this service no longer reads; send a new key"
		}
		// The operator sees which record and when; the caller never sees the stored response.
		k.cfg.Logger.Warn("idempotency: key reused with a different request", "route", rt.name,
			"key", apikey.ShortHash(rec.KeyHash), "client", apikey.ShortHash(rec.ClientHash), "firstAt", rec.CreatedAt, "firstAlg", rec.RequestHashAlg)
		k.answer(q.r.Context(), rt, problemKeyReused, answerMismatch, q.w, detail, "", 0)
		return
	}
	switch {
	case rec.State == apikey.StateProcessing && rec.LeaseLive:
		k.counts.add(rt.name, q.claim.ClientHash, k.cfg.Now(), countInProgress)
		k.answer(q.r.Context(), rt, problemInProgress, answerInProgress, q.w, "retry after the first request with this key finishes", "", max(rec.LeaseRemaining, retryShortly))
	case rec.State == apikey.StateProcessing && rec.CallsStarted > 0:
		// Its owner died or stalled after an external call started: nobody knows if it happened.
		if ok, err := k.cfg.Store.APIKeysMarkLapsedUncertain(q.r.Context(), q.key()); err == nil && ok {
			k.becameUncertain(q.r.Context(), rt, rec.KeyHash, q.claim.ClientHash, "lease lapsed after an external call started")
		}
		k.answer(q.r.Context(), rt, problemUncertain, answerUncertain, q.w, "the first request may have taken effect; it is being reconciled and will not run twice", "", reviewRetryAfter)
	case rec.State == apikey.StateUncertain:
		k.answer(q.r.Context(), rt, problemUncertain, answerUncertain, q.w, "the first request may have taken effect; it is being reconciled and will not run twice", "", reviewRetryAfter)
	case rec.State == apikey.StateCompleted && rec.ReplayOpen && rec.ResponseSealed != nil:
		k.replay(q, rec)
	case windowClosed:
		k.lookUpExpired(q, rec)
	case rec.State == apikey.StateReconciled && rec.Resolution == apikey.ResolutionHappened:
		k.counts.add(rt.name, q.claim.ClientHash, k.cfg.Now(), countReplay)
		k.answer(q.r.Context(), rt, problemDone, answerAlreadyDone, q.w, "the request was reconciled as done", rec.ExternalRef, 0)
	default:
		// received, a lapsed lease before any call, or not-happened: the claim lost a race
		// with a retry that took it; this one retries shortly.
		k.counts.add(rt.name, q.claim.ClientHash, k.cfg.Now(), countInProgress)
		k.answer(q.r.Context(), rt, problemInProgress, answerInProgress, q.w, "retry shortly", "", retryShortly)
	}
}

// sameIntent compares the request's fingerprint with the record's, under the record's algorithm:
// the current one, or one of the route's previous fingerprint options.
func (k *Keeper) sameIntent(rt *route, rec apikey.Record, body []byte) (bool, error) {
	if rec.Compact {
		// Its fingerprint left with its evidence: any body goes to the look-up, as for an
		// imported record without one.
		return true, nil
	}
	if rec.RequestHashAlg == rt.hasher.Algorithm() {
		return rec.RequestHash == rt.hasher.Sum(body), nil
	}
	h, err := fingerprint.Resolve(rec.RequestHashAlg, append([]fingerprint.Options{rt.Fingerprint}, rt.previous...)...)
	if err != nil {
		return false, err
	}
	return rec.RequestHash == h.Sum(body), nil
}

func (k *Keeper) replay(q *request, rec apikey.Record) {
	stored, err := openStored(k.cfg.Keyring, rec)
	if err != nil {
		k.cfg.Logger.Error("idempotency: a stored response does not open (a key retired from the keyring too early?)",
			"route", q.rt.name, "key", apikey.ShortHash(rec.KeyHash), "keyId", rec.ResponseKeyID, "err", err)
		k.answer(q.r.Context(), q.rt, problemUnreadable, answerUnreadable, q.w, "the request was done once and is not run again", rec.ExternalRef, 0)
		return
	}
	k.counts.add(q.rt.name, q.claim.ClientHash, k.cfg.Now(), countReplay)
	k.count(q.r.Context(), q.rt, answerReplayed)
	stored.replay(q.w)
}

// lookUpExpired answers a retry whose replay window closed on a route that does not take it as
// new: the route's look-up is asked once whether the call happened.
func (k *Keeper) lookUpExpired(q *request, rec apikey.Record) {
	rt := q.rt
	verdict, ref, detail := VerdictUnknown, "", "the route has no look-up"
	if rt.Lookup != nil {
		res, err := rt.Lookup(q.r.Context(), LookupRequest{Route: rt.name, OperationID: apikey.OperationID(rec.ScopeHash, rec.KeyHash), ExternalRef: rec.ExternalRef})
		verdict, ref, detail = res.Verdict, res.ExternalRef, res.Detail
		if err != nil {
			verdict, detail = VerdictUnknown, "the look-up failed"
		}
		k.metrics.lookups.WithLabelValues(rt.name, lookupLabel(verdict, err)).Inc()
	}
	switch verdict {
	case VerdictHappened:
		k.counts.add(rt.name, q.claim.ClientHash, k.cfg.Now(), countReplay)
		k.answer(q.r.Context(), rt, problemDone, answerAlreadyDone, q.w, "the request with this key happened; its stored response expired", firstNonEmpty(ref, rec.ExternalRef), 0)
	case VerdictNotHappened:
		k.runAsNew(q, rec)
	default:
		var ok bool
		var err error
		if rec.Compact {
			ok, err = k.cfg.Store.APIKeysReviewCompacted(q.r.Context(), q.claim, "expired key: "+detail)
		} else {
			ok, err = k.cfg.Store.APIKeysMarkReview(q.r.Context(), q.key(), "expired key: "+detail, rec.UpdatedAt)
		}
		if err == nil && ok {
			k.becameUncertain(q.r.Context(), rt, rec.KeyHash, q.claim.ClientHash, "expired key the look-up could not settle")
		}
		k.answer(q.r.Context(), rt, problemUncertain, answerUncertain, q.w, "this key's replay window closed and whether it happened is not known; it goes to review, retry later", "", reviewRetryAfter)
	}
}

// runAsNew takes over a record whose replay window closed and runs the request.
func (k *Keeper) runAsNew(q *request, rec apikey.Record) {
	var ok bool
	var err error
	if rec.Compact {
		ok, err = k.cfg.Store.APIKeysStartOverCompacted(q.r.Context(), q.claim)
	} else {
		ok, err = k.cfg.Store.APIKeysTakeOver(q.r.Context(), q.claim, rec.UpdatedAt)
	}
	switch {
	case err != nil:
		k.answer(q.r.Context(), q.rt, problemUnavailable, answerUnavailable, q.w, "retry later with the same key", "", 30*time.Second)
	case !ok:
		k.answer(q.r.Context(), q.rt, problemInProgress, answerInProgress, q.w, "another request with this key got there first; retry shortly", "", retryShortly)
	default:
		k.run(q)
	}
}

func (k *Keeper) becameUncertain(ctx context.Context, rt *route, keyHash, client, why string) {
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.AddEvent("uncertain", trace.WithAttributes(attribute.String("replayctl.reason", why)))
	}
	k.metrics.uncertain.WithLabelValues(rt.name).Inc()
	k.counts.add(rt.name, client, k.cfg.Now(), countUncertain)
	k.cfg.Logger.Warn("idempotency: record uncertain; it is never re-run automatically (reconcile worker or `replayctl keys resolve`)",
		"route", rt.name, "key", apikey.ShortHash(keyHash), "why", why)
}

// transient statuses are not outcomes: the record is released (no call took effect) so a retry
// runs, or left uncertain (a call may have).
func transient(status int) bool {
	return status >= 500 || status == http.StatusRequestTimeout || status == http.StatusTooEarly || status == http.StatusTooManyRequests
}

// run runs the handler of a claimed request, stores its response sealed, and sends it.
func (k *Keeper) run(q *request) {
	rt := q.rt
	c := &calls{store: k.cfg.Store, key: q.key(), owner: q.claim.Owner, opID: apikey.OperationID(q.claim.ScopeHash, q.claim.KeyHash)}
	ctx := context.WithValue(q.r.Context(), callsKey{}, c)
	stopHeartbeat := k.leases.hold(c)
	out := newCapture()
	panicked := serveRecovered(q.next, out, q.r.WithContext(ctx))
	stopHeartbeat()
	// The handler's context may be cancelled (the client went away): the record's end is
	// written regardless, or a finished request would look unfinished.
	bg := context.WithoutCancel(q.r.Context())
	status := out.statusOrOK()
	if panicked || transient(status) {
		if c.mayHaveActed() {
			if _, err := k.cfg.Store.APIKeysMarkUncertain(bg, c.key, c.owner, fmt.Sprintf("handler ended with status %d after an external call started", status)); err != nil {
				k.cfg.Logger.Warn("idempotency: mark uncertain failed; the lapsed lease will", "route", rt.name, "key", apikey.ShortHash(c.key.KeyHash), "err", err)
			}
			k.becameUncertain(q.r.Context(), rt, c.key.KeyHash, q.claim.ClientHash, fmt.Sprintf("handler status %d", status))
		} else if _, err := k.cfg.Store.APIKeysRelease(bg, c.key, c.owner); err != nil {
			k.cfg.Logger.Warn("idempotency: release failed; the lease lapses", "route", rt.name, "key", apikey.ShortHash(c.key.KeyHash), "err", err)
		}
		if panicked {
			k.answer(q.r.Context(), rt, problemHandlerFailed, answerHandlerFailed, q.w, "", "", 0)
			return
		}
		k.count(q.r.Context(), rt, answerHandlerFailed)
		out.writeTo(q.w)
		return
	}
	keyID, sealed := k.cfg.Keyring.Seal(out.stored(rt.storeHeaders).encode(), sealContext(c.key.ScopeHash, c.key.KeyHash))
	done := apikey.Completion{ScopeHash: c.key.ScopeHash, KeyHash: c.key.KeyHash,
		Owner: c.owner, Status: status, KeyID: keyID, Sealed: sealed, ExternalRef: c.externalRef(),
		ReplayWindow: rt.replayWindow, EvidenceWindow: rt.evidence}
	ok, err := k.cfg.Store.APIKeysComplete(bg, done)
	if err == nil && !ok && c.startedAny() {
		k.completeLate(bg, rt, done)
	} else if err != nil || !ok {
		// The effect happened and the caller is told so; the record stays processing until its
		// lease lapses into uncertain (a call started) or a retry runs it (none did).
		k.cfg.Logger.Warn("idempotency: the response was not stored", "route", rt.name, "key", apikey.ShortHash(c.key.KeyHash), "owned", ok, "err", err)
	}
	k.count(q.r.Context(), rt, answerHandled)
	out.writeTo(q.w)
}

// completeLate records the answer of a handler whose lease lapsed while its call ran (the process
// froze or stalled): another request found the record, made it uncertain, and a look-up or a
// person may have settled it since. What the call returned is the truth, so it replaces their
// verdict, loudly. When a retry has claimed the record since, its own call went to the provider
// under the same operation ID, which the provider answered with this call's result: nothing was
// done twice, and that retry's completion is the record's.
func (k *Keeper) completeLate(ctx context.Context, rt *route, done apikey.Completion) {
	log := k.cfg.Logger.With("route", rt.name, "key", apikey.ShortHash(done.KeyHash), "operationId", apikey.OperationID(done.ScopeHash, done.KeyHash))
	late, err := k.cfg.Store.APIKeysCompleteLate(ctx, done)
	switch {
	case err != nil:
		log.Warn("idempotency: a late completion was not stored; the record keeps its verdict", "err", err)
	case late == nil:
		log.Warn("idempotency: the handler finished after its lease lapsed and a retry had claimed the record; " +
			"the retry's call carried the same operation ID, so the provider answered it with this call's result")
	default:
		was := string(late.Was)
		if late.WasResolution != "" {
			was += "_" + string(late.WasResolution)
		}
		k.metrics.late.WithLabelValues(rt.name, was).Inc()
		if late.WasResolution == apikey.ResolutionNotHappened {
			log.Error("idempotency: a look-up's not_happened verdict was wrong: the request's call finished after its lease lapsed; "+
				"the record now holds its response (a retry replays it; check the provider if anyone acted on the verdict)", "status", done.Status)
			return
		}
		log.Warn("idempotency: the handler finished after its lease lapsed; its response replaces the record's "+string(late.Was)+" state", "status", done.Status)
	}
}

// serveRecovered runs h and reports whether it panicked; http.ErrAbortHandler panics again, as
// net/http expects.
func serveRecovered(h http.Handler, w http.ResponseWriter, r *http.Request) (panicked bool) {
	defer func() {
		if v := recover(); v != nil {
			if err, ok := v.(error); ok && errors.Is(err, http.ErrAbortHandler) {
				panic(v)
			}
			panicked = true
		}
	}()
	h.ServeHTTP(w, r)
	return false
}

func firstNonEmpty(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}
