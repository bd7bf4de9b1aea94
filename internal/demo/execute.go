package demo

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/replayctl/replayctl/consumer"
	"github.com/replayctl/replayctl/executor"
	"github.com/replayctl/replayctl/internal/billing"
	"github.com/replayctl/replayctl/jobtype"
	"github.com/replayctl/replayctl/ledger"
)

// The billing consumer's own stream: the DLQ messages' Dlq-Original-Subject
// (billing.charge.requested) is one of its subjects, so execute publishes the replays into it.
const (
	billingStream   = "BILLING"
	billingSubjects = "billing.>"
	// billingConcurrency is how many messages the demo's billing consumer handles at once: handlers
	// wait on the ledger's batched statements, so more of them share each commit (docs/ledger.md).
	billingConcurrency = 256
	// executeMaxInFlight bounds the published targets without an outcome in the ledger: a few
	// seconds of the consumer's work, so publishing never runs far ahead of it.
	executeMaxInFlight = 1000
	// executePollInterval is how often execute reads its progress from the ledger; shorter than
	// the command's 1s default, so a run of a few seconds ends (and draws its bar) promptly.
	executePollInterval = 200 * time.Millisecond
	// executeSettleTimeout ends a demo run that stops making progress: on a healthy demo every
	// target settles within seconds, so a stall is a bug to report, not to wait out for 5m.
	executeSettleTimeout = 30 * time.Second
	// consumerStopTimeout bounds how long stopping the consumer may wait for handlers in flight.
	consumerStopTimeout = 30 * time.Second
)

// dlqSubject is where the billing consumer dead-letters poison messages: a subject of the DLQ
// stream Seed creates (dlq.<consumer>.>). A dead letter would land after the plan's last
// sequence, which bounds the job, so it cannot change what the job replays.
func dlqSubject(consumerName string) string { return "dlq." + consumerName + ".charge" }

// Execution is the execute phase: a dry run, the real run through the billing consumer with a
// payment provider of its own, what that provider saw, and a second run that must be refused.
type Execution struct {
	// DryRun is the run with executor.Options.DryRun before the real one: every gate passed and
	// nothing was published.
	DryRun *executor.Result
	// Result is the real run; Err what it returned besides (a guard stop), nil on a clean run.
	Result *executor.Result
	Err    error
	// Durable is the billing consumer's durable on Stream.
	Stream, Durable string
	// StreamMessages counts the messages on the consumer's stream after the dry run, after the
	// run and after the refused second run: 0, the targets, the targets.
	StreamAfterDryRun, StreamAfterRun, StreamAfterSecond uint64
	// ProviderCallsAfterDryRun counts the provider's calls once the dry run returned (0);
	// ProviderCalls once the run returned; ProviderCallsAfterSecond after the second run.
	ProviderCallsAfterDryRun, ProviderCalls, ProviderCallsAfterSecond int64
	// Charges counts the provider's charges and receipts during the run.
	Charges, Receipts int64
	// ChargedOnce counts the targets whose order was charged exactly once; NotCharged those
	// never charged; Duplicates the orders charged more than once (first few in
	// DuplicateExamples); ExcludedCharged the events the plan excluded whose order was charged;
	// Strays the charged orders of no seeded DLQ event (history, say).
	ChargedOnce, NotCharged, Duplicates int64
	DuplicateExamples, ExcludedCharged  []string
	Strays                              int64
	// SecondRefusal is what executing the completed job again returned: a refusal of the
	// job-status gate (executor.GateStatus), with nothing published.
	SecondRefusal error
	// Duration is how long the real run took.
	Duration time.Duration
}

// TargetsPerSecond is the real run's throughput.
func (x *Execution) TargetsPerSecond() float64 {
	if x.Result == nil || x.Duration <= 0 {
		return 0
	}
	return float64(x.Result.Final.Completed) / x.Duration.Seconds()
}

// SecondGate is the gate that refused the second run, "" when none did.
func (x *Execution) SecondGate() string {
	if g, ok := errors.AsType[*executor.GateError](x.SecondRefusal); ok {
		return g.Gate
	}
	return ""
}

// maxExamples bounds the order and event IDs an Execution lists.
const maxExamples = 10

// executeJob runs the billing consumer for real on its stream and executes the shadowed job
// through it: a dry run first, then the run, then a second run that the job-status gate refuses.
func executeJob(ctx context.Context, nc *nats.Conn, js jetstream.JetStream, store *ledger.Store, opts Options, sc Scenario, report *Report) error {
	m := report.Plan.Manifest
	step := opts.Step
	x := &Execution{Stream: billingStream}
	report.Execution = x
	if err := ensureStream(ctx, js, billingStream, billingSubjects); err != nil {
		return err
	}

	// A fresh provider, so what it counts is the execute's doing alone.
	provider := billing.NewProvider()
	c, err := consumer.New(consumer.Config{
		Name:        m.Consumer,
		Store:       store,
		Conn:        nc,
		Stream:      billingStream,
		DLQSubject:  dlqSubject(m.Consumer),
		Concurrency: billingConcurrency,
		Handler:     billing.Handler(provider, time.Now),
	})
	if err != nil {
		return fmt.Errorf("demo: billing consumer: %w", err)
	}
	x.Durable = c.Config().Durable
	// The durable exists before execute looks for it, so its pending count throttles too.
	if _, err := c.EnsureDurable(ctx); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	// A consumer that stops on its own ends the run at once, rather than after the settle timeout.
	runCtx, cancelRun := context.WithCancelCause(ctx)
	defer cancelRun(nil)
	consumerCtx, stopConsumer := context.WithCancel(context.WithoutCancel(ctx))
	consumerDone := make(chan error, 1)
	go func() {
		err := c.Run(consumerCtx)
		if err != nil {
			cancelRun(fmt.Errorf("the billing consumer stopped: %w", err))
		}
		consumerDone <- err
	}()
	stopped := false
	stop := func() error {
		if stopped {
			return nil
		}
		stopped = true
		stopConsumer()
		select {
		case err := <-consumerDone:
			if err != nil {
				return fmt.Errorf("demo: the billing consumer: %w", err)
			}
			return nil
		case <-time.After(consumerStopTimeout):
			return fmt.Errorf("demo: the billing consumer did not stop within %s", consumerStopTimeout)
		}
	}
	defer func() { _ = stop() }()
	step("created stream %s (%s) and started the billing consumer on it: durable %s, %d messages at a time, a fresh payment provider",
		billingStream, billingSubjects, x.Durable, billingConcurrency)

	execOpts := func(dryRun bool) executor.Options {
		return executor.Options{
			Manifest:      m,
			Guards:        executor.DefaultGuards(),
			MaxInFlight:   executeMaxInFlight,
			DryRun:        dryRun,
			SettleTimeout: executeSettleTimeout,
			PollInterval:  executePollInterval,
			Actor:         opts.Actor,
			Progress:      opts.ExecuteProgress,
			Stage:         opts.Stage,
		}
	}
	execute := func(dryRun bool) (*executor.Result, error) {
		r, err := executor.Execute(runCtx, js, store, execOpts(dryRun))
		if cause := context.Cause(runCtx); err != nil && cause != nil && ctx.Err() == nil {
			err = fmt.Errorf("%w (%w)", err, cause)
		}
		return r, err
	}

	if x.DryRun, err = execute(true); err != nil {
		return fmt.Errorf("demo: dry run of job %s: %w", m.ID, err)
	}
	if x.StreamAfterDryRun, err = streamMessages(ctx, js, billingStream); err != nil {
		return err
	}
	x.ProviderCallsAfterDryRun = provider.Calls("")
	step("dry run of job %s: every gate passed, %d targets would be published; nothing was published (%d messages on %s)",
		m.ID, x.DryRun.Preflight.ToPublish, x.StreamAfterDryRun, billingStream)

	start := time.Now()
	x.Result, x.Err = execute(false)
	x.Duration = time.Since(start)
	if x.Result == nil {
		return fmt.Errorf("demo: execute job %s: %w", m.ID, x.Err)
	}
	if x.StreamAfterRun, err = streamMessages(ctx, js, billingStream); err != nil {
		return err
	}
	x.ProviderCalls = provider.Calls("")
	x.Charges, x.Receipts = provider.Calls(billing.EffectCharge), provider.Calls(billing.EffectReceipt)
	countCharges(x, report.Truth, sc.Events, provider.ChargedOrders())
	f := x.Result.Final
	step("executed job %s in %s (%.0f targets/s): %d published, %d completed, %d failed, %d uncertain; job %s",
		m.ID, x.Duration.Round(time.Millisecond), x.TargetsPerSecond(), x.Result.Published, f.Completed, f.Failed, f.Uncertain, x.Result.JobStatus)
	step("checked the payment provider: %d of %d targets charged exactly once, %d charged twice or more, %d excluded events charged, %d calls",
		x.ChargedOnce, report.Truth.Targets, x.Duplicates, len(x.ExcludedCharged), x.ProviderCalls)

	_, x.SecondRefusal = execute(false)
	if x.SecondRefusal != nil && !errors.Is(x.SecondRefusal, executor.ErrGateRefused) {
		return fmt.Errorf("demo: second execute of job %s: %w", m.ID, x.SecondRefusal)
	}
	if x.StreamAfterSecond, err = streamMessages(ctx, js, billingStream); err != nil {
		return err
	}
	// Stop the consumer first, so any message the second run might have published is handled
	// and counted before the provider is read.
	if err := stop(); err != nil {
		return err
	}
	x.ProviderCallsAfterSecond = provider.Calls("")
	if x.SecondRefusal != nil {
		step("executed job %s again: refused, nothing published: %v", m.ID, x.SecondRefusal)
	} else {
		step("executed job %s again: NOT refused — this is a bug", m.ID)
	}
	return nil
}

// ensureStream creates stream name on subjects unless it exists.
func ensureStream(ctx context.Context, js jetstream.JetStream, name, subjects string) error {
	_, err := js.Stream(ctx, name)
	if err == nil {
		return nil
	}
	if !errors.Is(err, jetstream.ErrStreamNotFound) {
		return fmt.Errorf("demo: look up stream %s: %w", name, err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{
		Name:      name,
		Subjects:  []string{subjects},
		Retention: jetstream.LimitsPolicy,
		Storage:   jetstream.FileStorage,
	}); err != nil {
		return fmt.Errorf("demo: create stream %s: %w", name, err)
	}
	return nil
}

func streamMessages(ctx context.Context, js jetstream.JetStream, name string) (uint64, error) {
	s, err := js.Stream(ctx, name)
	if err != nil {
		return 0, fmt.Errorf("demo: stream %s: %w", name, err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("demo: stream %s: %w", name, err)
	}
	return info.State.Msgs, nil
}

// countCharges sorts the orders the provider charged against the truth: each of the events
// evt-000000 .. evt-(events-1) is a target unless the truth names it excluded, and every target's
// order must be charged exactly once, every other order never.
func countCharges(x *Execution, truth Truth, events int, charged map[string]int64) {
	excluded := map[string]bool{}
	for _, ids := range [][]string{truth.ConflictSourceIDs, truth.ConflictLedgerIDs, truth.UncertainIDs, truth.InFlightIDs, truth.AlreadyCompletedIDs} {
		for _, id := range ids {
			excluded[id] = true
		}
	}
	seen := make(map[string]bool, len(charged))
	for i := range events {
		orderID := OrderID(i)
		n := charged[orderID]
		seen[orderID] = true
		switch {
		case excluded[EventID(i)]:
			if n > 0 {
				x.ExcludedCharged = append(x.ExcludedCharged, EventID(i))
			}
		case n == 0:
			x.NotCharged++
		case n == 1:
			x.ChargedOnce++
		default:
			x.Duplicates++
			if len(x.DuplicateExamples) < maxExamples {
				x.DuplicateExamples = append(x.DuplicateExamples, fmt.Sprintf("%s charged %d times", orderID, n))
			}
		}
	}
	for orderID := range charged {
		if !seen[orderID] {
			x.Strays++
		}
	}
}

// CompareExecute lists every figure of the execute phase x that differs from the truth: the dry
// run must have published nothing, the run must have completed every target exactly once through
// the provider (a charge and a receipt each) and nothing else, and a second run must be refused by
// the job-status gate without publishing.
func CompareExecute(truth Truth, x *Execution) []string {
	var out []string
	check := func(field string, want, got any) {
		if !reflect.DeepEqual(want, got) {
			out = append(out, fmt.Sprintf("execute %s: expected %v, got %v", field, want, got))
		}
	}
	if x.DryRun == nil || x.Result == nil {
		return []string{"execute: the dry run or the run did not return a result"}
	}
	targets := truth.Targets
	check("dry run: would publish", targets, x.DryRun.Preflight.ToPublish)
	check("dry run: published", int64(0), x.DryRun.Published)
	check("dry run: messages on the consumer's stream", uint64(0), x.StreamAfterDryRun)
	check("dry run: provider calls", int64(0), x.ProviderCallsAfterDryRun)
	check("dry run: durable found", true, x.DryRun.Preflight.DurableFound)
	if x.Err != nil {
		out = append(out, "execute run: "+x.Err.Error())
	}
	r, f := x.Result, x.Result.Final
	check("job status", jobtype.Completed, r.JobStatus)
	check("published", targets, r.Published)
	check("deduplicated by JetStream", int64(0), r.Deduplicated)
	check("messages on the consumer's stream", uint64(targets), x.StreamAfterRun)
	check("completed", targets, f.Completed)
	check("failed", int64(0), f.Failed)
	check("uncertain", int64(0), f.Uncertain)
	check("skipped", int64(0), f.Skipped)
	check("remaining", int64(0), f.Remaining)
	check("external calls in the ledger", billingEffects*targets, f.ExternalCalls)
	check("provider calls", billingEffects*targets, x.ProviderCalls)
	check("provider charges", targets, x.Charges)
	check("provider receipts", targets, x.Receipts)
	check("targets charged exactly once", targets, x.ChargedOnce)
	check("targets never charged", int64(0), x.NotCharged)
	check("orders charged more than once", int64(0), x.Duplicates)
	check("excluded events charged", []string(nil), x.ExcludedCharged)
	check("charged orders outside the DLQ", int64(0), x.Strays)
	check("second run refused by gate", executor.GateStatus, x.SecondGate())
	check("second run: messages on the consumer's stream", x.StreamAfterRun, x.StreamAfterSecond)
	check("second run: provider calls", x.ProviderCalls, x.ProviderCallsAfterSecond)
	return out
}
