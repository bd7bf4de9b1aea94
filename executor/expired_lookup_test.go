package executor_test

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/replayctl/replayctl/consumer"
	"github.com/replayctl/replayctl/fingerprint"
	"github.com/replayctl/replayctl/internal/testenv/exectest"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/ledger/ledgertest"
	"github.com/replayctl/replayctl/protocol"
)

// An event whose evidence expired and which the consumer's look-up said did not happen is planned,
// shadowed and replayed once; the one it said happened and the one it could not tell are never
// charged (issue 15 item 2, end to end).
func TestAnExpiredEventTheLookupSaysDidNotHappenIsReplayedOnce(t *testing.T) {
	t.Parallel()
	e := exectest.New(t, exectest.Options{})
	e.Seed(3)
	verdicts := map[string]string{exectest.EventID(0): protocol.VerdictHappened, exectest.EventID(1): protocol.VerdictNotHappened,
		exectest.EventID(2): protocol.VerdictUnknown}
	var rows []ledger.EffectRow
	for i := range 3 {
		data, err := json.Marshal(exectest.Order(i))
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, ledger.EffectRow{Consumer: exectest.Consumer, EventID: exectest.EventID(i), EffectVersion: 1, State: "completed",
			RequestHash: fingerprint.Payload(data), RequestHashAlg: fingerprint.Algorithm, EffectCount: 2})
	}
	if _, err := e.Store.EffectsImport(e.Ctx, rows); err != nil {
		t.Fatal(err)
	}
	ledgertest.MakeTombstones(t, e.DB)
	e.RunConsumer(e.NewConsumer(nil, func(cfg *consumer.Config) {
		cfg.Lookup = func(_ context.Context, req consumer.LookupRequest) (consumer.LookupResult, error) {
			return consumer.LookupResult{Verdict: verdicts[req.EventID]}, nil
		}
	}))
	// The plan asks the consumer's look-up; before Run serves it, the answer is "no responders"
	// and the event is held back as unknown (this test failed about 1 run in 4 that way).
	e.WaitPulling()

	m := e.Plan("job-expired-lookup")
	if !reflect.DeepEqual(m.EventIDs, []string{exectest.EventID(1)}) || m.Stats.EvidenceReconciled != 1 || m.Stats.EvidenceExpired != 1 {
		t.Fatalf("targets %v, evidenceReconciled %d, evidenceExpired %d; want only %s, 1 and 1",
			m.EventIDs, m.Stats.EvidenceReconciled, m.Stats.EvidenceExpired, exectest.EventID(1))
	}
	e.Shadow(m)
	r := mustExecute(t, e, options(m, nil))
	if r.Final.Completed != 1 || r.JobStatus != "completed" {
		t.Fatalf("final %+v, job %s; want the one target completed", r.Final, r.JobStatus)
	}
	for i, want := range []int64{0, 1, 0} {
		if n := e.Provider.Charges(exectest.Order(i).OrderID); n != want {
			t.Errorf("%s charged %d times, want %d", exectest.Order(i).OrderID, n, want)
		}
	}
}
