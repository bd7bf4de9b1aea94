package executor_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/replayctl/replayctl/consumer"
	"github.com/replayctl/replayctl/executor"
	"github.com/replayctl/replayctl/internal/testenv/exectest"
	"github.com/replayctl/replayctl/job"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/ledger/ledgertest"
	"github.com/replayctl/replayctl/protocol"
)

func TestExecuteReplaysEveryTargetOnceAndCompletesTheJob(t *testing.T) {
	t.Parallel()
	e := exectest.New(t, exectest.Options{})
	m := e.Shadowed(30, "job-exec-all")
	e.RunConsumer(e.NewConsumer(nil, nil))

	r := mustExecute(t, e, options(m, nil))

	if r.Published != 30 || r.Final.Completed != 30 || r.Final.Remaining != 0 || r.Final.Failed != 0 || r.Final.Uncertain != 0 {
		t.Fatalf("published %d, final %+v; want 30 published and completed", r.Published, r.Final)
	}
	if r.JobStatus != "completed" || e.JobStatus(m.ID) != "completed" {
		t.Fatalf("job status %s / %s, want completed", r.JobStatus, e.JobStatus(m.ID))
	}
	for i := range 30 {
		if n := e.Provider.Charges(exectest.Order(i).OrderID); n != 1 {
			t.Errorf("%s charged %d times, want once", exectest.Order(i).OrderID, n)
		}
	}
	if r.Final.ExternalCalls != 60 {
		t.Errorf("external calls %d, want 60 (a charge and a receipt per target)", r.Final.ExternalCalls)
	}
	counts, err := e.Store.JobTargetsCount(e.Ctx, m.ID)
	if err != nil {
		t.Fatal(err)
	}
	if counts["completed"] != 30 {
		t.Errorf("job_targets %v, want 30 completed", counts)
	}
	if n := e.QueryInt(`select count(*) from effect_versions where consumer = $1 and effect_version = $2 and job_id = $3 and state = 'completed'`,
		m.Consumer, m.EffectVersion.To, m.ID); n != 1 {
		t.Errorf("effect version %d of the job is not completed in the registry", m.EffectVersion.To)
	}
	actions := auditActions(t, e, m.ID)
	for _, want := range []string{"execute.started", "execute.completed"} {
		if !slices.Contains(actions, want) {
			t.Errorf("audit %v has no %s", actions, want)
		}
	}

	// A job runs once: a second execute is refused and publishes nothing.
	before := e.StreamMessages()
	_, err = execute(e, options(m, nil))
	if gate := gateOf(t, err); gate != executor.GateStatus {
		t.Fatalf("second execute refused by %s, want %s", gate, executor.GateStatus)
	}
	if after := e.StreamMessages(); after != before {
		t.Fatalf("a refused execute published %d messages", after-before)
	}
}

func TestReplayedMessagesCarryTheProtocolHeaders(t *testing.T) {
	t.Parallel()
	e := exectest.New(t, exectest.Options{})
	m := e.Shadowed(3, "job-exec-headers")
	// No consumer: the messages stay in the stream to be read. The run stalls, by design.
	_, err := execute(e, options(m, func(o *executor.Options) { o.SettleTimeout = 300 * time.Millisecond }))
	if stop, ok := errors.AsType[*executor.StopError](err); !ok || stop.Stop.Kind != executor.StopStalled {
		t.Fatalf("want a stall without a consumer, got %v", err)
	}
	for seq := uint64(1); seq <= 3; seq++ {
		msg := e.StreamMessage(seq)
		id := msg.Header.Get(protocol.HeaderEventID)
		want := map[string]string{
			protocol.HeaderReplayJob: m.ID, protocol.HeaderReplayMode: protocol.ModeExecute,
			protocol.HeaderReplayEffectVersion: "2", protocol.HeaderReplayWriteForbidden: "false",
			protocol.HeaderMsgID: protocol.MsgID(m.ID, id), "Trace-Id": "trace-" + id,
		}
		for h, v := range want {
			if got := msg.Header.Get(h); got != v {
				t.Errorf("message %d (%s): %s is %q, want %q", seq, id, h, got, v)
			}
		}
		if msg.Header.Get("Dlq-Reason") != "" || msg.Subject != exectest.OriginalSubject {
			t.Errorf("message %d: subject %s, Dlq-Reason %q: want the original subject without DLQ headers", seq, msg.Subject, msg.Header.Get("Dlq-Reason"))
		}
	}
	if e.JobStatus(m.ID) != "executing" {
		t.Fatalf("a stalled job is %s, want executing (run execute again to keep waiting)", e.JobStatus(m.ID))
	}
}

func TestDryRunPublishesNothingAndChangesNothing(t *testing.T) {
	t.Parallel()
	e := exectest.New(t, exectest.Options{})
	m := e.Shadowed(12, "job-exec-dry")

	r := mustExecute(t, e, options(m, func(o *executor.Options) { o.DryRun = true }))

	if !r.DryRun || r.Preflight.ToPublish != 12 || len(r.Preflight.FirstTargets) != 10 || r.Published != 0 {
		t.Fatalf("dry run: %+v", r.Preflight)
	}
	if r.Preflight.FirstTargets[0].MsgID != protocol.MsgID(m.ID, r.Preflight.FirstTargets[0].EventID) {
		t.Errorf("first target %+v", r.Preflight.FirstTargets[0])
	}
	if n := e.StreamMessages(); n != 0 {
		t.Fatalf("a dry run published %d messages", n)
	}
	if s := e.JobStatus(m.ID); s != "shadowed" {
		t.Fatalf("a dry run moved the job to %s", s)
	}
	if n := e.QueryInt(`select count(*) from effect_versions where job_id = $1`, m.ID); n != 0 {
		t.Fatal("a dry run registered the effect version")
	}
	if !slices.Contains(auditActions(t, e, m.ID), "execute.dry_run") {
		t.Fatal("the dry run is not in the audit log")
	}
}

func TestEachGateRefusesWithNothingPublished(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		gate  string
		setup func(t *testing.T, e *exectest.Env) executor.Options
	}{
		{"not shadowed", executor.GateStatus, func(t *testing.T, e *exectest.Env) executor.Options {
			e.Seed(5)
			return options(e.Plan("job-gate"), nil)
		}},
		{"failing verdict", executor.GateShadow, func(t *testing.T, e *exectest.Env) executor.Options {
			m := e.Shadowed(5, "job-gate")
			_, err := e.DB.Exec(e.Ctx, `insert into shadow_verdicts (job_id, manifest_digest, verdict, sample_seed, thresholds, totals, reasons, actor)
				values ($1, $2, 'fail', 'seed', '{}', '{}', '["3 shadow errors"]', 'dave')`, m.ID, m.Digest)
			if err != nil {
				t.Fatal(err)
			}
			return options(m, nil)
		}},
		{"another manifest digest", executor.GateJob, func(t *testing.T, e *exectest.Env) executor.Options {
			m := e.Shadowed(5, "job-gate")
			other := *m
			other.Digest = "sha256:" + "00000000000000000000000000000000000000000000000000000000000000aa"
			return options(&other, nil)
		}},
		{"version used since plan", executor.GateVersion, func(t *testing.T, e *exectest.Env) executor.Options {
			m := e.Shadowed(5, "job-gate")
			if err := ledger.EffectVersionsRegister(e.Ctx, e.DB, m.Consumer, m.EffectVersion.To, ledger.EffectVersionLive, "", "deploy"); err != nil {
				t.Fatal(err)
			}
			return options(m, nil)
		}},
		{"stale plan", executor.GateDrift, func(t *testing.T, e *exectest.Env) executor.Options {
			m := e.Shadowed(5, "job-gate")
			completeUnderV1(t, e, 0)
			return options(m, nil)
		}},
		{"another executor", executor.GateExecutor, func(t *testing.T, e *exectest.Env) executor.Options {
			m := e.Shadowed(5, "job-gate")
			release, err := e.Store.ExecuteLock(e.Ctx, m.ID)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(release)
			return options(m, nil)
		}},
		{"another job of the consumer executing", executor.GateConsumer, func(t *testing.T, e *exectest.Env) executor.Options {
			m := e.Shadowed(5, "job-gate")
			job, err := e.Store.JobsGet(e.Ctx, m.ID)
			if err != nil {
				t.Fatal(err)
			}
			job.ID, job.Status = "job-other", "executing"
			if err := ledger.JobsInsert(e.Ctx, e.DB, job); err != nil {
				t.Fatal(err)
			}
			return options(m, nil)
		}},
		{"not confirmed", executor.GateConfirmation, func(t *testing.T, e *exectest.Env) executor.Options {
			m := e.Shadowed(5, "job-gate")
			return options(m, func(o *executor.Options) {
				o.Confirm = func(p executor.Preflight) (bool, error) { return false, nil }
			})
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := exectest.New(t, exectest.Options{})
			o := c.setup(t, e)
			e.RunConsumer(e.NewConsumer(nil, nil))
			for _, dry := range []bool{true, false} {
				if dry && c.gate == executor.GateConfirmation {
					continue // a dry run asks for no confirmation
				}
				o.DryRun = dry
				_, err := execute(e, o)
				if gate := gateOf(t, err); gate != c.gate {
					t.Fatalf("dry run %t: refused by %s (%v), want %s", dry, gate, err, c.gate)
				}
				if !errors.Is(err, executor.ErrGateRefused) {
					t.Fatalf("%v does not match ErrGateRefused", err)
				}
			}
			if n := e.StreamMessages(); n != 0 {
				t.Fatalf("a refused run published %d messages", n)
			}
			if calls := e.Provider.Calls(""); calls != 0 {
				t.Fatalf("a refused run made %d external calls", calls)
			}
			if !slices.Contains(auditActions(t, e, "job-gate"), "execute.refused") {
				t.Fatal("the refusal is not in the audit log")
			}
		})
	}
}

// completeUnderV1 records seeded event i as completed under version 1 by live traffic.
func completeUnderV1(t *testing.T, e *exectest.Env, i int) {
	t.Helper()
	var payloadHash string
	if err := e.DB.QueryRow(e.Ctx, `select payload_hash from job_targets where event_id = $1`, exectest.EventID(i)).Scan(&payloadHash); err != nil {
		t.Fatal(err)
	}
	ledgertest.InsertEffects(t, e.DB, ledgertest.Effect{Consumer: exectest.Consumer, EventID: exectest.EventID(i),
		RequestHash: payloadHash, EffectCount: 2})
}

func TestDriftWithinTheThresholdIsSkipped(t *testing.T) {
	t.Parallel()
	e := exectest.New(t, exectest.Options{})
	m := e.Shadowed(10, "job-exec-drift")
	completeUnderV1(t, e, 3)
	e.RunConsumer(e.NewConsumer(nil, nil))

	r := mustExecute(t, e, options(m, func(o *executor.Options) { o.MaxDriftRatio = 0.1 }))

	if r.Preflight.Drift.Drifted != 1 || r.Preflight.Drift.ByKind[ledger.DriftCompleted] != 1 {
		t.Fatalf("drift %+v, want one target completed since plan", r.Preflight.Drift)
	}
	if r.Final.Skipped != 1 || r.Final.Completed != 9 || r.Published != 9 {
		t.Fatalf("final %+v, published %d: want 1 skipped, 9 replayed", r.Final, r.Published)
	}
	if n := e.Provider.Charges(exectest.Order(3).OrderID); n != 0 {
		t.Fatalf("the drifted target was charged %d times", n)
	}
}

func TestPauseStopsPublishingAndResumeContinues(t *testing.T) {
	t.Parallel()
	e := exectest.New(t, exectest.Options{})
	m := e.Shadowed(60, "job-exec-pause")
	e.RunConsumer(e.NewConsumer(nil, nil))

	type outcome struct {
		r   *executor.Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		r, err := execute(e, options(m, func(o *executor.Options) { o.Rate = 40 }))
		done <- outcome{r, err}
	}()
	waitFor(t, "the first targets to complete", func() bool { return e.EffectCounts(m).Completed >= 5 })
	res, err := job.Pause(e.Ctx, e.Store, job.Control{JobID: m.ID, Actor: "erin", Reason: "provider latency"})
	if err != nil {
		t.Fatal(err)
	}
	if !res.ExecutorAttached || res.To != "paused" {
		t.Fatalf("pause: %+v", res)
	}
	// Status says "pausing" until the run's poll saw the pause; then a publish that had passed its
	// turn may still land.
	waitFor(t, "the executor to see the pause", func() bool {
		st, err := executor.Status(e.Ctx, e.Store, m.ID)
		return err == nil && st.Counts.State == "paused"
	})
	time.Sleep(200 * time.Millisecond)
	paused := e.StreamMessages()
	time.Sleep(time.Second)
	if later := e.StreamMessages(); later != paused {
		t.Fatalf("%d messages published while paused", later-paused)
	}
	if paused >= 60 {
		t.Fatalf("everything was published before the pause took effect (%d)", paused)
	}
	status, err := executor.Status(e.Ctx, e.Store, m.ID)
	if err != nil {
		t.Fatal(err)
	}
	if status.Counts.State != "paused" || status.StatusBy != "erin" {
		t.Fatalf("status while paused: state %q by %q", status.Counts.State, status.StatusBy)
	}
	if _, err := job.Resume(e.Ctx, e.Store, job.Control{JobID: m.ID, Actor: "erin"}); err != nil {
		t.Fatal(err)
	}
	out := <-done
	if out.err != nil {
		t.Fatal(out.err)
	}
	if out.r.Final.Completed != 60 || len(e.DuplicateCharges()) != 0 {
		t.Fatalf("after resume: %+v, duplicates %v", out.r.Final, e.DuplicateCharges())
	}
	actions := auditActions(t, e, m.ID)
	for _, want := range []string{"job.pause", "job.resume"} {
		if !slices.Contains(actions, want) {
			t.Errorf("audit %v has no %s", actions, want)
		}
	}
}

func TestCancelStopsTheRunAndKeepsWhatWasReplayed(t *testing.T) {
	t.Parallel()
	e := exectest.New(t, exectest.Options{})
	m := e.Shadowed(60, "job-exec-cancel")
	e.RunConsumer(e.NewConsumer(nil, nil))

	done := make(chan error, 1)
	var result *executor.Result
	go func() {
		var err error
		result, err = execute(e, options(m, func(o *executor.Options) { o.Rate = 40 }))
		done <- err
	}()
	waitFor(t, "the first targets to complete", func() bool { return e.EffectCounts(m).Completed >= 5 })
	if _, err := job.Cancel(e.Ctx, e.Store, job.Control{JobID: m.ID, Actor: "erin", Reason: "wrong filter"}); err != nil {
		t.Fatal(err)
	}
	err := <-done
	stop, ok := errors.AsType[*executor.StopError](err)
	if !ok || stop.Stop.Kind != executor.StopCancelled || stop.Stop.By != "erin" {
		t.Fatalf("want a cancel stop by erin, got %v", err)
	}
	if result.Final.Completed == 0 || result.Final.Completed >= 60 {
		t.Fatalf("completed %d: want some, not all", result.Final.Completed)
	}
	if e.JobStatus(m.ID) != "cancelled" {
		t.Fatalf("job %s", e.JobStatus(m.ID))
	}
	if n := e.QueryInt(`select count(*) from effect_versions where job_id = $1 and state = 'cancelled'`, m.ID); n != 1 {
		t.Fatal("the effect version is not cancelled: the consumer would still accept the job's messages")
	}
	if dups := e.DuplicateCharges(); len(dups) != 0 {
		t.Fatalf("duplicates: %v", dups)
	}
	// A cancelled job is final.
	_, err = execute(e, options(m, nil))
	if gate := gateOf(t, err); gate != executor.GateStatus {
		t.Fatalf("execute after cancel refused by %s", gate)
	}
	if _, err := job.Resume(e.Ctx, e.Store, job.Control{JobID: m.ID}); !errors.Is(err, job.ErrNotControllable) {
		t.Fatalf("resume after cancel: %v", err)
	}
}

func TestCallBudgetGuardStopsAndPausesTheJob(t *testing.T) {
	t.Parallel()
	e := exectest.New(t, exectest.Options{})
	m := e.Shadowed(40, "job-exec-budget")
	// The consumer now makes a third external call per event: over the plan's two.
	extra := func(ctx context.Context, ev consumer.Event, fx *consumer.Effects) (consumer.Result, error) {
		if _, err := fx.Call(ctx, "audit.log", "audit-api", func(context.Context) (string, error) { return "ok", nil }); err != nil {
			return consumer.Result{}, err
		}
		return billingHandler(e)(ctx, ev, fx)
	}
	e.RunConsumer(e.NewConsumer(extra, nil))

	// At most 5 targets ahead of the ledger, the guard's poll (at 20 settled) comes with at most
	// 24 of 40 published, however the machine schedules the consumer: a rate left that to timing.
	r, err := execute(e, options(m, func(o *executor.Options) { o.MaxInFlight = 5 }))
	stop, ok := errors.AsType[*executor.StopError](err)
	if !ok || stop.Stop.Kind != executor.StopCallBudget {
		t.Fatalf("want the call budget guard, got %v", err)
	}
	if !errors.Is(err, executor.ErrGuardStopped) {
		t.Fatal("a guard stop does not match ErrGuardStopped")
	}
	if r.Final.Remaining == 0 {
		t.Fatal("the guard stopped nothing: every target settled")
	}
	if s := e.JobStatus(m.ID); s != "paused" {
		t.Fatalf("job %s after a guard stop, want paused", s)
	}
	if !slices.Contains(auditActions(t, e, m.ID), "execute.guard_stopped") {
		t.Fatal("the guard stop is not in the audit log")
	}
}

func TestUncertainTargetsAreListedForReview(t *testing.T) {
	t.Parallel()
	e := exectest.New(t, exectest.Options{})
	m := e.Shadowed(10, "job-exec-uncertain")
	unsure := map[string]bool{exectest.EventID(2): true, exectest.EventID(7): true}
	handler := func(ctx context.Context, ev consumer.Event, fx *consumer.Effects) (consumer.Result, error) {
		if unsure[ev.ID] && ev.Mode == consumer.ModeReplay {
			_, err := fx.Call(ctx, "payments.charge", "payments-api", func(context.Context) (string, error) {
				return "", consumer.ErrOutcomeUnknown
			})
			return consumer.Result{}, err
		}
		return billingHandler(e)(ctx, ev, fx)
	}
	e.RunConsumer(e.NewConsumer(handler, nil))

	r := mustExecute(t, e, options(m, nil))

	if r.Final.Uncertain != 2 || r.Final.Completed != 8 || len(r.Uncertain) != 2 {
		t.Fatalf("final %+v, uncertain list %d: want 2 uncertain, 8 completed", r.Final, len(r.Uncertain))
	}
	if r.Uncertain[0].EventID != exectest.EventID(2) || r.Uncertain[1].EventID != exectest.EventID(7) {
		t.Fatalf("uncertain %v", []string{r.Uncertain[0].EventID, r.Uncertain[1].EventID})
	}
	if r.JobStatus != "completed" {
		t.Fatalf("job %s", r.JobStatus)
	}
}

func TestErrorRateGuardStopsOnBusinessFailures(t *testing.T) {
	t.Parallel()
	e := exectest.New(t, exectest.Options{})
	m := e.Shadowed(60, "job-exec-errors")
	// Under the new version one order in three is declined: a terminal business outcome.
	handler := func(ctx context.Context, ev consumer.Event, fx *consumer.Effects) (consumer.Result, error) {
		if ev.Mode == consumer.ModeReplay && ev.ID[len(ev.ID)-1]%3 == 0 {
			return consumer.Result{}, consumer.Business(errors.New("card declined"))
		}
		return billingHandler(e)(ctx, ev, fx)
	}
	e.RunConsumer(e.NewConsumer(handler, nil))

	// Bounded in flight, not paced, so the stop before the end does not depend on timing.
	r, err := execute(e, options(m, func(o *executor.Options) { o.MaxInFlight = 5 }))

	stop, ok := errors.AsType[*executor.StopError](err)
	if !ok || stop.Stop.Kind != executor.StopErrorRate {
		t.Fatalf("want the error-rate guard, got %v", err)
	}
	if r.Final.Failed == 0 || r.Final.Remaining == 0 || len(r.Failed) == 0 {
		t.Fatalf("final %+v, failed list %d: want failures listed and the run stopped before the end", r.Final, len(r.Failed))
	}
	if e.JobStatus(m.ID) != "paused" {
		t.Fatalf("job %s, want paused by the guard", e.JobStatus(m.ID))
	}
}

func TestUncertainGuardStopsPublishing(t *testing.T) {
	t.Parallel()
	e := exectest.New(t, exectest.Options{})
	m := e.Shadowed(40, "job-exec-unsure")
	handler := func(ctx context.Context, ev consumer.Event, fx *consumer.Effects) (consumer.Result, error) {
		if ev.Mode == consumer.ModeReplay {
			_, err := fx.Call(ctx, "payments.charge", "payments-api", func(context.Context) (string, error) {
				return "", consumer.ErrOutcomeUnknown
			})
			return consumer.Result{}, err
		}
		return billingHandler(e)(ctx, ev, fx)
	}
	e.RunConsumer(e.NewConsumer(handler, nil))

	r, err := execute(e, options(m, func(o *executor.Options) { o.MaxInFlight = 5; o.Guards.MaxUncertain = 2 }))

	stop, ok := errors.AsType[*executor.StopError](err)
	if !ok || stop.Stop.Kind != executor.StopUncertain {
		t.Fatalf("want the uncertain guard, got %v", err)
	}
	if r.Final.Uncertain <= 2 || r.Published >= 40 {
		t.Fatalf("uncertain %d, published %d: want the run stopped after more than 2 uncertain", r.Final.Uncertain, r.Published)
	}
}

// A run that stalls with targets in progress says where leases of a dead consumer show and what
// settles them; one with nothing in progress (TestReplayedMessagesCarryTheProtocolHeaders) need not.
func TestAStallWithTargetsInProgressPointsAtStuckLeases(t *testing.T) {
	t.Parallel()
	e := exectest.New(t, exectest.Options{})
	m := e.Shadowed(3, "job-exec-stall-leases")
	hung := make(chan struct{})
	e.RunConsumer(e.NewConsumer(func(ctx context.Context, ev consumer.Event, fx *consumer.Effects) (consumer.Result, error) {
		if ev.Mode == consumer.ModeReplay {
			<-hung // a handler hung on its provider
			return consumer.Result{}, errors.New("provider hung")
		}
		return billingHandler(e)(ctx, ev, fx)
	}, nil))
	// Registered after the consumer, so it runs first: the consumer's shutdown waits for handlers.
	t.Cleanup(func() { close(hung) })

	_, err := execute(e, options(m, func(o *executor.Options) { o.SettleTimeout = 500 * time.Millisecond }))
	stop, ok := errors.AsType[*executor.StopError](err)
	if !ok || stop.Stop.Kind != executor.StopStalled {
		t.Fatalf("want a stall, got %v", err)
	}
	for _, want := range []string{"in progress in the ledger", "replayctl ledger stats --consumer " + m.Consumer, "replayctl reconcile"} {
		if !strings.Contains(stop.Stop.Message, want) {
			t.Errorf("the stall message lacks %q: %s", want, stop.Stop.Message)
		}
	}
}
