package consumer_test

import (
	"errors"
	"testing"
	"time"

	"github.com/replayctl/replayctl/consumer"
	"github.com/replayctl/replayctl/fingerprint"
	"github.com/replayctl/replayctl/jobtype"
	"github.com/replayctl/replayctl/ledger"
)

func TestReplayRunsOnlyUnderAnExecutingRegistration(t *testing.T) {
	e := newEnv(t)
	c := e.newConsumer(nil)
	cons := e.durable(c)
	payload := orderJSON("acct-1", 250)
	e.publish("e1", payload, nil)
	e.processNext(c, cons, consumer.OutcomeCompleted)

	// Version 2 unknown, then registered for another job: a bumped version alone gets nowhere.
	e.publish("e1", payload, replay("job-1", 2, false))
	if out := e.processNext(c, cons, consumer.OutcomeRefused); !errors.Is(out.Err, consumer.ErrReplayRefused) {
		t.Fatalf("refusal error %v", out.Err)
	}
	e.register(2, ledger.EffectVersionExecuting, "job-other")
	e.publish("e1", payload, replay("job-1", 2, false))
	e.processNext(c, cons, consumer.OutcomeRefused)
	if n := e.count(`select count(*) from effects where effect_version = 2`); n != 0 {
		t.Fatalf("%d rows written for refused replays", n)
	}

	// Only a backfill re-processes an event a version completed (issue 14: a DLQ replay of it is a
	// duplicate, see TestDLQReplayOfACompletedEventIsADuplicate).
	e.recordJob("job-1", 3, jobtype.SourceBackfill)
	e.register(3, ledger.EffectVersionExecuting, "job-1")
	e.publish("e1", payload, replay("job-1", 3, false))
	out := e.processNext(c, cons, consumer.OutcomeCompleted)
	if out.EffectVersion != 3 {
		t.Fatalf("replay processed under version %d", out.EffectVersion)
	}
	r := e.row("e1", 3)
	if r.State != "completed" || r.JobID != "job-1" || r.EffectCount != 1 {
		t.Fatalf("replay row %+v", r)
	}
	if live := e.row("e1", 1); live.State != "completed" || live.JobID != "" {
		t.Fatalf("the live row changed: %+v", live)
	}
	// A redelivered replay is a duplicate of its own version.
	e.publish("e1", payload, replay("job-1", 3, false))
	e.processNext(c, cons, consumer.OutcomeDuplicate)
	e.settled(cons)
	if n := e.p.calls.Load(); n != 2 {
		t.Fatalf("provider calls %d, want the live one and the replay", n)
	}
}

func TestDLQReplayOfACompletedEventIsADuplicate(t *testing.T) {
	e := newEnv(t)
	c := e.newConsumer(nil)
	cons := e.durable(c)
	payload := orderJSON("acct-1", 250)
	e.publish("e1", payload, nil)
	e.processNext(c, cons, consumer.OutcomeCompleted)

	// A DLQ job registered as executing, whose target another version completed meanwhile (a
	// cancelled job's last message, a live copy): the replay is answered from the ledger.
	e.recordJob("job-dlq", 2, jobtype.SourceDLQ)
	e.register(2, ledger.EffectVersionExecuting, "job-dlq")
	e.publish("e1", payload, replay("job-dlq", 2, false))
	e.processNext(c, cons, consumer.OutcomeDuplicate)
	// A registration with no job row reads as a DLQ job too: fail closed.
	e.register(3, ledger.EffectVersionExecuting, "job-unrecorded")
	e.publish("e1", payload, replay("job-unrecorded", 3, false))
	e.processNext(c, cons, consumer.OutcomeDuplicate)
	e.settled(cons)
	if n := e.p.calls.Load(); n != 1 {
		t.Fatalf("provider calls %d, want only the live one", n)
	}
	if n := e.count(`select count(*) from effects where effect_version > 1`); n != 0 {
		t.Fatalf("%d rows written by the duplicate replays", n)
	}
}

func TestWriteForbiddenReplayRecordsCallsWithoutMakingThem(t *testing.T) {
	e := newEnv(t)
	c := e.newConsumer(nil)
	cons := e.durable(c)
	e.register(2, ledger.EffectVersionExecuting, "job-wf")
	e.publish("e1", orderJSON("acct-1", 250), replay("job-wf", 2, true))

	out := e.processNext(c, cons, consumer.OutcomeCompleted)
	e.settled(cons)
	if n := e.p.calls.Load(); n != 0 {
		t.Fatalf("a write-forbidden replay called the provider %d times", n)
	}
	if len(out.Effects) != 1 || !out.Effects[0].Suppressed || out.Effects[0].Ref != "" || out.Effects[0].Target != "acct-1" {
		t.Fatalf("outcome effects %+v, want the charge recorded as suppressed", out.Effects)
	}
	r := e.row("e1", 2)
	if refs := refsOf(t, r); r.EffectCount != 0 || len(refs) != 1 || !refs[0].Suppressed || r.CallsStarted != 0 || !r.WriteForbidden {
		t.Fatalf("row effect_count %d calls_started %d write_forbidden %v external_refs %+v", r.EffectCount, r.CallsStarted, r.WriteForbidden, refs)
	}

	// The write-forbidden completion settled nothing: the live copy (the event was dead-lettered
	// and is delivered again) is processed for real, once, and a redelivery of it is a duplicate.
	e.publish("e1", orderJSON("acct-1", 250), nil)
	live := e.processNext(c, cons, consumer.OutcomeCompleted)
	if live.EffectVersion != 1 || e.p.calls.Load() != 1 {
		t.Fatalf("live copy after a write-forbidden replay: version %d, provider calls %d; want version 1 and one call",
			live.EffectVersion, e.p.calls.Load())
	}
	e.publish("e1", orderJSON("acct-1", 250), nil)
	e.processNext(c, cons, consumer.OutcomeDuplicate)
	e.settled(cons)
	if n := e.p.calls.Load(); n != 1 {
		t.Fatalf("provider calls %d after the redelivery, want 1", n)
	}
}

func TestLiveCopyOfAReplayedEventIsADuplicate(t *testing.T) {
	e := newEnv(t)
	c := e.newConsumer(func(cfg *consumer.Config) { cfg.MaxDeliver = 1 })
	cons := e.durable(c)
	payload := orderJSON("acct-1", 250)
	e.p.failWith(consumer.NotExecuted(errors.New("connection refused")))
	e.publish("e1", payload, nil)
	e.processNext(c, cons, consumer.OutcomeDeadLettered)

	e.p.failWith(nil)
	e.register(2, ledger.EffectVersionExecuting, "job-1")
	e.publish("e1", payload, replay("job-1", 2, false))
	e.processNext(c, cons, consumer.OutcomeCompleted)

	// The live version's row is still only received, but the event is done: a late live copy
	// must not charge again under version 1.
	e.publish("e1", payload, nil)
	e.processNext(c, cons, consumer.OutcomeDuplicate)
	e.settled(cons)
	if r := e.row("e1", 1); r.State != "received" {
		t.Fatalf("live row %+v", r)
	}
	if n := e.p.calls.Load(); n != 2 {
		t.Fatalf("provider calls %d, want the refused live attempt and the replay", n)
	}
}

func TestReplayWaitsForALiveCopyInFlight(t *testing.T) {
	e := newEnv(t)
	c := e.newConsumer(nil)
	cons := e.durable(c)
	payload := orderJSON("acct-1", 250)
	if _, err := ledger.EffectsClaim(e.ctx, e.db, ledger.EffectClaim{
		Key:         ledger.EffectKey{Consumer: consumerName, EventID: "e1", EffectVersion: 1},
		RequestHash: fingerprint.Payload([]byte(payload)), RequestHashAlg: fingerprint.Algorithm, Owner: "instance-b", Lease: time.Minute,
	}); err != nil {
		t.Fatal(err)
	}
	e.register(2, ledger.EffectVersionExecuting, "job-1")
	e.publish("e1", payload, replay("job-1", 2, false))

	e.processNext(c, cons, consumer.OutcomeInProgress)
	if n := e.count(`select count(*) from effects where effect_version = 2`); n != 0 || e.p.calls.Load() != 0 {
		t.Fatalf("the replay ran beside the live copy: %d rows under version 2, %d provider calls", n, e.p.calls.Load())
	}
}
