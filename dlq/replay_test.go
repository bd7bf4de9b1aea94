package dlq_test

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/replayctl/replayctl/dlq"
	"github.com/replayctl/replayctl/protocol"
)

// The DLQ message's traceparent names the delivery that failed: the replay carries it as
// Replay-Original-Traceparent, never as its own (the consumer would file a replay days later
// under the failed delivery's trace).
func TestReplayMsgCarriesTheEventsHeadersAndDropsTheDLQs(t *testing.T) {
	dead := dlq.DeadLetter{Subject: "dlq.billing", EventID: "e1", OriginalSubject: "billing.charge.requested",
		Class: "provider unavailable", Detail: "charge order o-1: provider unavailable", Attempts: 3,
		FailedAt: time.Now(), Payload: []byte(`{"orderId":"o-1"}`),
		Carried: nats.Header{"Traceparent": {"00-abc-01"}, protocol.HeaderReplayJob: {"job-old"}}}
	src := dead.Msg()
	src.Header.Set(protocol.HeaderMsgID, "dlq:billing:e1:7")
	replay := dlq.ReplayMsg("billing.charge.requested", src.Data, src.Header, dlq.DefaultHeaders,
		dlq.Replay{EventID: "e1", JobID: "job-2", EffectVersion: 2})
	want := map[string]string{
		protocol.HeaderReplayOriginalTraceparent: "00-abc-01", protocol.HeaderEventID: "e1", protocol.HeaderReplayJob: "job-2",
		protocol.HeaderReplayMode: protocol.ModeExecute, protocol.HeaderReplayEffectVersion: "2",
		protocol.HeaderReplayWriteForbidden: "false", protocol.HeaderMsgID: protocol.MsgID("job-2", "e1"),
	}
	if len(replay.Header) != len(want) {
		t.Errorf("replay headers %v, want exactly %v", replay.Header, want)
	}
	for k, v := range want {
		if got := replay.Header.Get(k); got != v {
			t.Errorf("replay header %s = %q, want %q", k, got, v)
		}
	}
	if tp := replay.Header.Values(protocol.HeaderTraceparent); len(tp) != 0 {
		t.Errorf("replay carries the DLQ message's traceparent %v as its own", tp)
	}
	if string(replay.Data) != `{"orderId":"o-1"}` {
		t.Errorf("replay payload %q, want the DLQ message's", replay.Data)
	}
}

// ReplaySize must be the size nats.go checks against max_payload, or plan would let through a
// message that execute cannot publish (or keep out one it can).
func TestReplaySizeIsTheEncodedSizeOfTheReplay(t *testing.T) {
	names := dlq.DefaultHeaders
	names.Reason = "X-Failure"
	for _, c := range []struct {
		name   string
		header nats.Header
	}{
		{"no headers", nats.Header{}},
		{"only DLQ headers", nats.Header{"Event-Id": {"e1"}, "X-Failure": {"timeout"}, dlq.HeaderReasonDetail: {"long text"},
			"Dlq-Original-Subject": {"a.b"}, "Dlq-Attempts": {"5"}, "Dlq-Failed-At": {"2026-01-01T00:00:00Z"}}},
		{"carried headers, several values, padded values", nats.Header{"Traceparent": {"00-abc-01"},
			"Tags": {"a", " b ", "c\t"}, "Dlq-Reason": {"carried: not this plan's reason header"}, "Nats-Expected-Stream": {"X"}}},
		{"an old replay's headers", nats.Header{protocol.HeaderReplayJob: {"job-1"}, protocol.HeaderMsgID: {"job-1:e1"}}},
	} {
		for _, r := range []dlq.Replay{{EventID: "e1", JobID: "job-2", EffectVersion: 2},
			{EventID: "evt-0000000000042", JobID: "job-20260101T000000Z-abcdef", EffectVersion: 1234567, WriteForbidden: true}} {
			data := []byte(`{"amountCents":100}`)
			msg := dlq.ReplayMsg("billing.charge.requested", data, c.header, names, r)
			want := msg.Size() - len(msg.Subject)
			if got := dlq.ReplaySize(data, c.header, names, r); got != want {
				t.Errorf("%s, %+v: ReplaySize = %d, nats.go encodes %d", c.name, r, got, want)
			}
		}
	}
}

func TestADeadLetterParsesBackToItsFields(t *testing.T) {
	dead := dlq.DeadLetter{Subject: "dlq.billing", EventID: "e1", OriginalSubject: "billing.charge.requested",
		Class: "provider unavailable", Detail: "charge order o-1: provider unavailable", Attempts: 3, FailedAt: time.Now()}
	m := dead.Msg()
	f := dlq.Parse(m.Header, dlq.DefaultHeaders)
	if f.EventID != "e1" || f.Reason != "provider unavailable" || f.OriginalSubject != "billing.charge.requested" ||
		f.EventIDErr != nil || f.OriginalSubjectErr != nil {
		t.Fatalf("parsed %+v", f)
	}
	if got := m.Header.Get(dlq.HeaderReasonDetail); got != dead.Detail {
		t.Fatalf("%s = %q, want the detail", dlq.HeaderReasonDetail, got)
	}
}

// The headers a job's replays share must not let one replay's headers change another's.
func TestJobReplaysDoNotShareWhatEachMayChange(t *testing.T) {
	j := dlq.NewJobReplay(dlq.DefaultHeaders, "job-2", 2, false)
	src := nats.Header{"Traceparent": {"00-abc-01"}}
	first := j.Msg("billing.charge.requested", []byte(`{}`), src, "e1")
	second := j.Msg("billing.charge.requested", []byte(`{}`), src, "e2")
	first.Header.Set(protocol.HeaderReplayMode, "shadow")
	first.Header.Add(protocol.HeaderReplayJob, "job-3")
	first.Header.Set("Traceparent", "00-def-01")
	if got := second.Header.Get(protocol.HeaderReplayMode); got != protocol.ModeExecute {
		t.Errorf("Replay-Mode of the second replay = %q after the first changed, want %q", got, protocol.ModeExecute)
	}
	if got := second.Header.Values(protocol.HeaderReplayJob); len(got) != 1 || got[0] != "job-2" {
		t.Errorf("Replay-Job of the second replay = %q after the first changed, want [job-2]", got)
	}
	if got := second.Header.Get(protocol.HeaderEventID); got != "e2" {
		t.Errorf("Event-Id of the second replay = %q, want e2", got)
	}
	if got := src.Get("Traceparent"); got != "00-abc-01" {
		t.Errorf("the DLQ message's Traceparent = %q after a replay changed its own, want 00-abc-01", got)
	}
}
