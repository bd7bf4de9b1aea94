// Package protocol holds the NATS contract between replayctl and the consumers it replays to:
// header names, subjects and the shadow reply. docs/protocol.md documents it for consumers not
// written in Go; the Go SDK (consumer/) and replayctl's shadow and execute steps both import it, so
// the two sides cannot drift apart.
package protocol

import (
	"encoding/json"
	"fmt"
	"strings"
)

// DLQ headers: a DLQ message keeps its original payload and carries these (names are configurable
// per plan; these are the defaults).
const (
	HeaderEventID         = "Event-Id"
	HeaderDLQReason       = "Dlq-Reason"
	HeaderDLQOriginalSubj = "Dlq-Original-Subject"
	HeaderDLQAttempts     = "Dlq-Attempts"
	HeaderDLQFailedAt     = "Dlq-Failed-At"
)

// Replay headers, set by replayctl on shadow requests and on replayed messages.
const (
	HeaderReplayJob            = "Replay-Job"
	HeaderReplayMode           = "Replay-Mode"
	HeaderReplayEffectVersion  = "Replay-Effect-Version"
	HeaderReplayWriteForbidden = "Replay-Write-Forbidden"
	// HeaderMsgID is JetStream's publish-dedup header; execute sets it to MsgID(job, event).
	HeaderMsgID = "Nats-Msg-Id"
)

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
		return false, fmt.Errorf("%s is %q, want true or false", HeaderReplayWriteForbidden, clip(v))
	}
}

// clip bounds a header value quoted in an error.
func clip(s string) string {
	if len(s) > 32 {
		return s[:32] + "…"
	}
	return s
}

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
