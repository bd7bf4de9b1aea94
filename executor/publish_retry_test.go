package executor

import (
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/replayctl/replayctl/fingerprint"
	"github.com/replayctl/replayctl/internal/testenv/exectest"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/protocol"
)

// TestRetryRoundSkipsTargetsTheLedgerHasAndFailsOnlyTheRefusedOne: three publishes failed in an
// outage. The ledger has a row for one (its message reached the consumer, the acknowledgement was
// lost): it counts as published and is not sent again. One is sent again. One is larger than the
// server's max_payload: that target fails with the reason, and nothing else does.
func TestRetryRoundSkipsTargetsTheLedgerHasAndFailsOnlyTheRefusedOne(t *testing.T) {
	t.Parallel()
	e := exectest.New(t, exectest.Options{})
	const jobID, version = "job-retry-round", 2
	_, err := e.Store.EffectsImport(e.Ctx, []ledger.EffectRow{{Consumer: exectest.Consumer, EventID: "evt-landed", EffectVersion: version,
		State: "completed", RequestHash: "sha256:00", RequestHashAlg: fingerprint.Algorithm, JobID: jobID}})
	if err != nil {
		t.Fatal(err)
	}
	s := &session{store: e.Store, js: e.NATS.JS, job: ledger.Job{ID: jobID, Consumer: exectest.Consumer, EffectVersionTo: version}}
	failed := func(eventID string, size int) pendingAck {
		msg := nats.NewMsg(exectest.OriginalSubject)
		msg.Data = []byte(strings.Repeat("x", size))
		msg.Header.Set(protocol.HeaderEventID, eventID)
		msg.Header.Set(protocol.HeaderMsgID, protocol.MsgID(jobID, eventID))
		return pendingAck{target: ledger.ExecTarget{EventID: eventID, OriginalSubject: exectest.OriginalSubject}, msg: msg}
	}
	q := &retryQueue{}
	for _, a := range []pendingAck{failed("evt-landed", 10), failed("evt-lost", 10), failed("evt-huge", int(e.NATS.Conn.MaxPayload()))} {
		q.add(a, jetstream.ErrAsyncPublishTimeout)
	}
	st := &runState{}
	st.sent.Add(3)
	pub, err := jetstream.New(e.NATS.Conn)
	if err != nil {
		t.Fatal(err)
	}

	published, refused, err := s.retryRound(e.Ctx, pub, q, st)
	if err != nil {
		t.Fatal(err)
	}
	if len(published) != 2 || published[0] != "evt-landed" || published[1] != "evt-lost" {
		t.Errorf("published %v, want evt-landed (from the ledger) and evt-lost (sent again)", published)
	}
	if got := e.StreamMessages(); got != 1 {
		t.Errorf("%d messages on the stream, want 1: only evt-lost is sent again", got)
	}
	if len(refused) != 1 || refused[0].EventID != "evt-huge" || !strings.Contains(refused[0].Detail, "exceeds the NATS server's max_payload") {
		t.Errorf("refused %+v, want evt-huge failed for exceeding max_payload", refused)
	}
	if len(q.failed) != 0 {
		t.Errorf("%d publishes still queued, want none", len(q.failed))
	}
	if st.landedUnacked.Load() != 1 || st.republished.Load() != 1 || st.acked.Load() != 2 || st.sent.Load() != 2 {
		t.Errorf("landed %d, republished %d, acked %d, sent %d; want 1, 1, 2 and 2 (the refused one is not in flight)",
			st.landedUnacked.Load(), st.republished.Load(), st.acked.Load(), st.sent.Load())
	}
}
