package consumer

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/replayctl/replayctl/protocol"
)

// replayHeaderNames are the headers a refusal of a replayed or shadowed message must name one of.
var replayHeaderNames = []string{protocol.HeaderEventID, protocol.HeaderReplayJob, protocol.HeaderReplayMode,
	protocol.HeaderReplayEffectVersion, protocol.HeaderReplayWriteForbidden}

// fuzzHeaders builds the headers of a message; an empty value leaves the header out.
func fuzzHeaders(eventID, job, mode, version, writeForbidden string) nats.Header {
	h := nats.Header{}
	for name, v := range map[string]string{protocol.HeaderEventID: eventID, protocol.HeaderReplayJob: job,
		protocol.HeaderReplayMode: mode, protocol.HeaderReplayEffectVersion: version,
		protocol.HeaderReplayWriteForbidden: writeForbidden} {
		if v != "" {
			h.Set(name, v)
		}
	}
	return h
}

// checkRefusal fails unless err is an ErrInvalidMessage naming one of the headers.
func checkRefusal(t *testing.T, err error) {
	t.Helper()
	if !errors.Is(err, ErrInvalidMessage) {
		t.Fatalf("refusal %v does not match ErrInvalidMessage (the message would be retried)", err)
	}
	for _, name := range replayHeaderNames {
		if strings.Contains(err.Error(), name) {
			return
		}
	}
	t.Fatalf("refusal %q names none of the headers %v", err, replayHeaderNames)
}

// FuzzStreamEvent feeds the SDK's reading of a JetStream message arbitrary Event-Id and replay
// headers, as a foreign or broken publisher could: it never panics; a refusal is an
// ErrInvalidMessage (dead-lettered, never retried) naming the header; an accepted replay has a
// version the ledger can store; and the accepted event, written back as headers, reads the same.
// Seeds are in testdata/fuzz/FuzzStreamEvent.
func FuzzStreamEvent(f *testing.F) {
	f.Fuzz(func(t *testing.T, eventID, job, mode, version, writeForbidden string) {
		ev, err := streamEvent("billing.charge", []byte(`{}`), fuzzHeaders(eventID, job, mode, version, writeForbidden), 1, 1)
		if err != nil {
			checkRefusal(t, err)
			return
		}
		if ev.ID != eventID {
			t.Fatalf("event ID %q read as %q", eventID, ev.ID)
		}
		if ev.Mode == ModeLive {
			if job != "" || ev.EffectVersion != 1 {
				t.Fatalf("live message with Replay-Job %q, version %d", job, ev.EffectVersion)
			}
			return
		}
		if ev.EffectVersion < 1 || int64(ev.EffectVersion) > 1<<31-1 {
			t.Fatalf("replay accepted with effect version %d from %q", ev.EffectVersion, version)
		}
		again, err := streamEvent("billing.charge", []byte(`{}`), fuzzHeaders(ev.ID, ev.JobID, protocol.ModeExecute,
			strconv.Itoa(ev.EffectVersion), protocol.FormatBool(ev.WriteForbidden)), 1, 1)
		if err != nil || again.JobID != ev.JobID || again.EffectVersion != ev.EffectVersion || again.WriteForbidden != ev.WriteForbidden {
			t.Fatalf("written back, the replay reads %+v, %v; first %+v", again, err, ev)
		}
	})
}

// FuzzShadowEvent is FuzzStreamEvent for a shadow request, whose headers are all required.
// Seeds are in testdata/fuzz/FuzzShadowEvent.
func FuzzShadowEvent(f *testing.F) {
	f.Fuzz(func(t *testing.T, eventID, job, mode, version, writeForbidden string) {
		msg := &nats.Msg{Subject: protocol.ShadowSubject("billing"), Data: []byte(`{}`),
			Header: fuzzHeaders(eventID, job, mode, version, writeForbidden)}
		ev, err := shadowEvent(msg)
		if err != nil {
			checkRefusal(t, err)
			return
		}
		if ev.Mode != ModeShadow || mode != protocol.ModeShadow || ev.ID != eventID || ev.JobID != job || ev.EffectVersion < 1 {
			t.Fatalf("accepted %+v from mode %q, event %q, job %q, version %q", ev, mode, eventID, job, version)
		}
		msg.Header = fuzzHeaders(ev.ID, ev.JobID, protocol.ModeShadow, strconv.Itoa(ev.EffectVersion), protocol.FormatBool(ev.WriteForbidden))
		again, err := shadowEvent(msg)
		if err != nil || again.EffectVersion != ev.EffectVersion || again.WriteForbidden != ev.WriteForbidden {
			t.Fatalf("written back, the request reads %+v, %v; first %+v", again, err, ev)
		}
	})
}
