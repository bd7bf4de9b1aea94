package consumer_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/replayctl/replayctl/consumer"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/ledger/ledgertest"
	"github.com/replayctl/replayctl/protocol"
)

// lookups is a look-up that answers one verdict and keeps the requests it was asked.
type lookups struct {
	verdict string
	mu      sync.Mutex
	asked   []consumer.LookupRequest
}

func (l *lookups) lookup(_ context.Context, req consumer.LookupRequest) (consumer.LookupResult, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.asked = append(l.asked, req)
	res := consumer.LookupResult{Verdict: l.verdict, Detail: "provider says " + l.verdict}
	if l.verdict == protocol.VerdictHappened {
		res.ExternalRefs = []protocol.Effect{{Kind: "charge", Target: "acct-1", Ref: "ch_found"}}
	}
	return res, nil
}

func (l *lookups) requests() []consumer.LookupRequest {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]consumer.LookupRequest{}, l.asked...)
}

// A pruned event that comes back is never taken for a new one (issue 15): the look-up decides,
// once, and only its not_happened lets the provider be called again.
func TestARedeliveryAfterItsEvidenceExpiredAsksTheLookupOnce(t *testing.T) {
	for _, tc := range []struct {
		name      string
		verdict   string // empty: no Lookup configured
		outcome   consumer.OutcomeKind
		then      consumer.OutcomeKind
		calls     int64
		state     string
		reviewing bool
	}{
		{"happened", protocol.VerdictHappened, consumer.OutcomeReconciled, consumer.OutcomeDuplicate, 1, "reconciled", false},
		{"unknown", protocol.VerdictUnknown, consumer.OutcomeUncertain, consumer.OutcomeUncertain, 1, "uncertain", true},
		{"no look-up", "", consumer.OutcomeUncertain, consumer.OutcomeUncertain, 1, "uncertain", true},
		{"not happened", protocol.VerdictNotHappened, consumer.OutcomeCompleted, consumer.OutcomeDuplicate, 2, "completed", false},
	} {
		for _, compact := range []bool{false, true} {
			name := tc.name
			if compact {
				name += " after compaction"
			}
			t.Run(name, func(t *testing.T) {
				e := newEnv(t)
				l := &lookups{verdict: tc.verdict}
				c := e.newConsumer(func(cfg *consumer.Config) {
					if tc.verdict != "" {
						cfg.Lookup = l.lookup
					}
				})
				cons := e.durable(c)
				payload := orderJSON("acct-1", 250)
				e.publish("e1", payload, nil)
				e.processNext(c, cons, consumer.OutcomeCompleted)
				e.expireEvidence("e1")
				if compact {
					e.compactTombstone("e1")
				}

				e.publish("e1", payload, nil)
				out := e.processNext(c, cons, tc.outcome)
				if tc.outcome != consumer.OutcomeCompleted && !strings.Contains(out.Err.Error(), "evidence expired") {
					t.Errorf("outcome error %v does not say the evidence expired", out.Err)
				}
				// A further copy is answered from what the verdict recorded: no second look-up.
				e.publish("e1", payload, nil)
				e.processNext(c, cons, tc.then)
				e.settled(cons)

				if n := e.p.calls.Load(); n != tc.calls {
					t.Fatalf("provider calls %d, want %d", n, tc.calls)
				}
				asked := l.requests()
				if tc.verdict != "" && len(asked) != 1 {
					t.Fatalf("the look-up was asked %d times, want once", len(asked))
				}
				// A compact tombstone keeps no refs: the look-up is asked by event ID and payload hash.
				wantRefs := 1
				if compact {
					wantRefs = 0
				}
				if len(asked) == 1 {
					if refs := asked[0].ExternalRefs; len(refs) != wantRefs || (wantRefs == 1 && refs[0].Ref != "ch_1") || asked[0].RequestHash == "" {
						t.Errorf("look-up request %+v: want the tombstone's %d charge(s) and the request hash", asked[0], wantRefs)
					}
				}
				r := e.row("e1", 1)
				if r.State != tc.state {
					t.Fatalf("row after the verdict %+v, want %s", r, tc.state)
				}
				var review string
				if err := e.db.QueryRow(e.ctx, `select coalesce(review_state, '') from effects where event_id = 'e1'`).Scan(&review); err != nil {
					t.Fatal(err)
				}
				if (review == ledger.ReviewManual) != tc.reviewing {
					t.Errorf("review_state %q, want manual review: %v", review, tc.reviewing)
				}
				if tc.verdict == protocol.VerdictHappened {
					if refs := refsOf(t, r); len(refs) != wantRefs+1 || refs[wantRefs].Ref != "ch_found" {
						t.Errorf("reconciled refs %+v: want the recorded charge(s) and the one the look-up found", refs)
					}
				}
				if n := e.count(`select count(*) from audit where action = $1`, ledger.AuditEvidenceExpired); tc.verdict != "" && n != 1 {
					t.Errorf("%d audit entries of the verdict, want 1", n)
				}
			})
		}
	}
}

// Once its tombstone is gone too, an event's only trace is its message's age.
func TestAnOldMessageWithoutARowAsksTheLookup(t *testing.T) {
	e := newEnv(t)
	l := &lookups{verdict: protocol.VerdictUnknown}
	c := e.newConsumer(func(cfg *consumer.Config) {
		cfg.Lookup = l.lookup
		cfg.ResultRetention, cfg.EvidenceRetention = 50*time.Millisecond, 50*time.Millisecond
	})
	cons := e.durable(c)
	e.publish("e1", orderJSON("acct-1", 250), nil)
	time.Sleep(100 * time.Millisecond)
	out := e.processNext(c, cons, consumer.OutcomeUncertain)
	if !strings.Contains(out.Err.Error(), "older than the evidence retention") {
		t.Errorf("outcome error %v", out.Err)
	}
	e.settled(cons)
	if n := e.p.calls.Load(); n != 0 || len(l.requests()) != 1 {
		t.Fatalf("%d provider calls and %d look-ups, want none and one", n, len(l.requests()))
	}
	if r := e.row("e1", 1); r.State != "uncertain" || r.CallsStarted != 0 {
		t.Fatalf("row %+v, want uncertain for review", r)
	}
}

// compactTombstone dates eventID's tombstone past prune's compaction age and runs a real prune,
// which moves it out of effects into its compact form.
func (e *env) compactTombstone(eventID string) {
	e.t.Helper()
	ledgertest.EndWindows(e.t, e.db, 0, 8*24*time.Hour, eventID)
	r, err := e.store.Prune(e.ctx, ledger.PruneOptions{Consumer: consumerName, Actor: "test", CompactAfter: ledger.SuggestedCompactAfter})
	if err != nil || r.Total.Compacted == 0 {
		e.t.Fatalf("prune: %+v, %v; want the event's tombstone compacted", r, err)
	}
	if n := e.count(`select count(*) from effects where event_id = $1`, eventID); n != 0 {
		e.t.Fatalf("%d effects rows of %s left after compaction, want none", n, eventID)
	}
	if row := e.row(eventID, 1); row.State != ledger.EffectExpired {
		e.t.Fatalf("compacted row read back as %+v, want an expired tombstone", row)
	}
}

// expireEvidence dates eventID's rows past evidence_until and runs a real prune, which turns them
// into tombstones.
func (e *env) expireEvidence(eventID string) {
	e.t.Helper()
	ledgertest.EndWindows(e.t, e.db, 2*24*time.Hour, 24*time.Hour, eventID)
	r, err := e.store.Prune(e.ctx, ledger.PruneOptions{Consumer: consumerName, Actor: "test"})
	if err != nil || r.Total.Tombstoned == 0 {
		e.t.Fatalf("prune: %+v, %v; want the event's rows tombstoned", r, err)
	}
	if row := e.row(eventID, 1); row.State != ledger.EffectExpired || row.ResultBody != nil {
		e.t.Fatalf("pruned row %+v, want an expired tombstone without a body", row)
	}
}
