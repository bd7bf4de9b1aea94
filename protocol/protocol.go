// Package protocol holds the NATS contract between replayctl and the consumers it replays to:
// header names, subjects and the shadow reply. docs/protocol.md documents it for consumers not
// written in Go; the Go SDK (consumer/) and replayctl's shadow and execute steps both import it, so
// the two sides cannot drift apart.
package protocol

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/replayctl/replayctl/internal/clip"
)

// HeaderEventID carries the event's stable ID on every message: live, DLQ (package dlq owns the
// DLQ's other headers), shadow request and replay.
const HeaderEventID = "Event-Id"

// Replay headers, set by replayctl on shadow requests and on replayed messages.
const (
	HeaderReplayJob            = "Replay-Job"
	HeaderReplayMode           = "Replay-Mode"
	HeaderReplayEffectVersion  = "Replay-Effect-Version"
	HeaderReplayWriteForbidden = "Replay-Write-Forbidden"
	// HeaderMsgID is JetStream's publish-dedup header; execute sets it to MsgID(job, event).
	HeaderMsgID = "Nats-Msg-Id"
	// HeaderReplayOriginalTraceparent carries, on a replay and a shadow request, the DLQ
	// message's W3C traceparent: the delivery that failed. The replay's own Traceparent (when
	// execute traces) is a new trace; consumers link their span to this one (docs/tracing.md).
	HeaderReplayOriginalTraceparent = "Replay-Original-Traceparent"
)

// W3C trace context headers, in the canonical form replayctl writes them. A dead letter carries
// the failed delivery's; a replay never carries the DLQ message's as its own. NATS keeps a
// header's case as sent and producers write W3C's "traceparent": read them with HeaderFold.
const (
	HeaderTraceparent = "Traceparent"
	HeaderTracestate  = "Tracestate"
)

// HeaderFold returns h's values of name in any case: the exact key first, then the first key
// equal to it under case folding.
func HeaderFold(h map[string][]string, name string) (key string, values []string) {
	if v, ok := h[name]; ok {
		return name, v
	}
	for k, v := range h {
		if strings.EqualFold(k, name) {
			return k, v
		}
	}
	return "", nil
}

// ModeShadow is the only Replay-Mode value a shadow request carries; a replayed message for real
// carries ModeExecute.
const (
	ModeShadow  = "shadow"
	ModeExecute = "execute"
)

// ShadowSubjectPrefix is followed by the consumer name: replay.shadow.<consumer>.
const ShadowSubjectPrefix = "replay.shadow."

// ShadowQueueGroup is the queue group every instance of a consumer's shadow responder joins, so
// each shadow request is answered once.
const ShadowQueueGroup = "replayctl-shadow"

// ShadowSubject is the request subject of consumer's shadow responder.
func ShadowSubject(consumer string) string { return ShadowSubjectPrefix + consumer }

// MsgID is the Nats-Msg-Id of event's replay in job: the same pair is deduplicated by JetStream
// within its window, and by the ledger's unique key beyond it.
func MsgID(job, event string) string { return job + ":" + event }

// FormatBool spells a Replay-Write-Forbidden value: "true" or "false".
func FormatBool(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// ParseWriteForbidden reads a Replay-Write-Forbidden value: "true" or "false" (trimmed, any case),
// and an absent header (empty) as false. Any other value is an error, never a guess: reading a
// misspelt "yes" as false would make the external writes the sender meant to forbid.
func ParseWriteForbidden(s string) (bool, error) {
	switch v := strings.TrimSpace(s); {
	case v == "" || strings.EqualFold(v, "false"):
		return false, nil
	case strings.EqualFold(v, "true"):
		return true, nil
	default:
		return false, fmt.Errorf("%s is %q, want true or false", HeaderReplayWriteForbidden, clip.Runes(v, quotedValueRunes))
	}
}

// quotedValueRunes bounds a header value quoted in an error: 32 runes and the ellipsis.
const quotedValueRunes = 33

// Shadow reply statuses.
const (
	StatusOK    = "ok"
	StatusError = "error"
)

// ShadowReply is the JSON body of a shadow responder's reply.
type ShadowReply struct {
	EventID string `json:"eventId"`
	Status  string `json:"status"`
	// ResultHash is "sha256:<hex>" over the canonical JSON of Result (fingerprint.Payload).
	ResultHash string          `json:"resultHash,omitempty"`
	Result     json.RawMessage `json:"result,omitempty"`
	// Effects are the external calls the handler would have made; in shadow none is made.
	Effects []Effect `json:"effects"`
	Error   string   `json:"error,omitempty"`
}

// Effect is one external call a handler made or, in shadow and write-forbidden modes, would have made.
type Effect struct {
	Kind   string `json:"kind"`
	Target string `json:"target"`
	// Ref is the provider's reference for a call that was made (a charge ID); empty otherwise.
	Ref string `json:"ref,omitempty"`
	// Suppressed says the call was recorded but not made (shadow or write-forbidden).
	Suppressed bool `json:"suppressed,omitempty"`
}

// ReconcileSubjectPrefix is followed by the consumer name: replay.reconcile.<consumer>, where the
// consumer's look-up responder answers `replayctl reconcile`.
const ReconcileSubjectPrefix = "replay.reconcile."

// ReconcileQueueGroup is the queue group every instance of a consumer's look-up responder joins,
// so each look-up is answered once.
const ReconcileQueueGroup = "replayctl-reconcile"

// ReconcileSubject is the request subject of consumer's look-up responder.
func ReconcileSubject(consumer string) string { return ReconcileSubjectPrefix + consumer }

// Look-up verdicts: whether the external effect of an uncertain event exists at the provider.
const (
	// VerdictHappened: the effect exists; the row becomes reconciled and is never replayed.
	VerdictHappened = "happened"
	// VerdictNotHappened: the provider has no trace of it; the row stays uncertain for manual review.
	VerdictNotHappened = "not_happened"
	// VerdictUnknown: the look-up cannot tell; the row stays uncertain for manual review.
	VerdictUnknown = "unknown"
)

// ReconcileRequest is the JSON body of a look-up request: one uncertain ledger row, without payload.
type ReconcileRequest struct {
	Consumer      string `json:"consumer"`
	EventID       string `json:"eventId"`
	EffectVersion int    `json:"effectVersion"`
	// RequestHash is the row's request fingerprint ("sha256:<hex>"), RequestHashAlg its algorithm.
	RequestHash    string `json:"requestHash"`
	RequestHashAlg string `json:"requestHashAlg,omitempty"`
	// ExternalRefs are the calls the row recorded so far (made ones carry their reference).
	ExternalRefs []Effect `json:"externalRefs"`
	// CallsStarted counts the external calls begun under the row's last lease.
	CallsStarted int `json:"callsStarted"`
	// JobID is the replay job that wrote the row; empty for a live message.
	JobID string `json:"jobId,omitempty"`
}

// ReconcileReply is the JSON body of a look-up responder's reply.
type ReconcileReply struct {
	EventID string `json:"eventId"`
	// Verdict is VerdictHappened, VerdictNotHappened or VerdictUnknown.
	Verdict string `json:"verdict"`
	// ExternalRefs are the provider's references found for the event (charge IDs); stored on the
	// row when the verdict is happened.
	ExternalRefs []Effect `json:"externalRefs"`
	// Detail says how the look-up decided, for the operator and the audit log; no payload or PII.
	Detail string `json:"detail,omitempty"`
}
