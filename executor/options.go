package executor

import (
	"fmt"
	"math"
	"os"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"go.opentelemetry.io/otel/trace"

	"github.com/replayctl/replayctl/internal/clip"
	"github.com/replayctl/replayctl/jobtype"
	"github.com/replayctl/replayctl/manifest"
)

// Guards stop a running replay (exit code 4); each is a documented flag of `replayctl execute`.
// They are used as given: start from DefaultGuards, since a zero field is the strictest guard.
type Guards struct {
	// MaxCallsOver (--max-calls-over) is the fraction by which the replay's external calls may
	// exceed the manifest's expectedExternalCalls, prorated over the targets settled so far.
	MaxCallsOver float64 `json:"maxCallsOver"`
	// MaxErrorRatio (--max-error-ratio) bounds failed targets (business failures, DLQ messages
	// gone or changed) / settled targets.
	MaxErrorRatio float64 `json:"maxErrorRatio"`
	// MaxUncertain (--max-uncertain) is how many uncertain targets the run tolerates before it
	// stops publishing.
	MaxUncertain int64 `json:"maxUncertain"`
	// MaxRetryingRatio (--max-retrying-ratio) bounds the published targets waiting to retry after
	// a transient failure / the published targets without an outcome (after 10 retrying).
	MaxRetryingRatio float64 `json:"maxRetryingRatio"`
}

// DefaultGuards lets calls exceed the plan's estimate by 10% (the shadow gate's default), stops
// at 5% failures, stops publishing once more than 10 targets need manual review, and once more
// than 80% of the targets in flight are retrying (a dependency down, not a flaky one: a few
// transient failures with a long backoff stay well below it).
func DefaultGuards() Guards {
	return Guards{MaxCallsOver: 0.10, MaxErrorRatio: 0.05, MaxUncertain: 10, MaxRetryingRatio: 0.80}
}

// Options is one execute request.
type Options struct {
	// Manifest is the job's manifest, already loaded and verified by the caller.
	Manifest *manifest.Manifest
	// Rate is the most targets published per second; 0 means no limit.
	Rate float64
	// MaxInFlight bounds the targets published but without an outcome in the ledger, and the
	// durable consumer's pending messages; 0 means 1000.
	MaxInFlight int
	// RateUnset and MaxInFlightUnset say the operator named no --rate or --max-in-flight: the
	// pace stored with the job (`replayctl pace`, or the run before) is used instead, when it has
	// one. Rate and MaxInFlight are recorded as the job's pace when the run starts, and a pace
	// changed while it runs is taken at the next poll.
	RateUnset, MaxInFlightUnset bool
	// Canary is how many targets the run publishes, lets settle and judges by every guard before
	// it opens Rate and MaxInFlight (canary.go); 0 means 1% of the targets, at least 10, at most
	// 500; NoCanary opens them at once.
	Canary int
	// DryRun runs every gate and reports what would be published, and publishes nothing.
	DryRun bool
	// Confirm is asked, once every gate passed, whether to go ahead; false refuses (gate
	// "confirmation"). nil goes ahead (--yes).
	Confirm func(Preflight) (bool, error)
	// Durable is the consumer whose pending count throttles publishing; default the manifest's
	// consumer name (the SDK's default durable). A durable that does not exist is reported, and
	// the ledger's in-flight count alone throttles.
	Durable string
	// Guards stop the run, as given: a zero Guards is the strictest, not the default.
	Guards Guards
	// MaxDriftRatio bounds the targets whose ledger rows changed since plan, as a fraction of
	// the targets still to settle; those within it are skipped. 0 refuses any drift.
	MaxDriftRatio float64
	// SettleTimeout ends a run whose published targets make no progress in the ledger for this
	// long; 0 means 5m.
	SettleTimeout time.Duration
	// PollInterval is how often the ledger is read for progress, pause and cancel; 0 means 1s.
	PollInterval time.Duration
	// Actor is recorded in the audit log; empty means "unknown".
	Actor string
	// Owner names this executor in the job's run state; default "<host>-<pid>".
	Owner string
	// Now is the clock; default time.Now.
	Now func() time.Time
	// TracerProvider gets the run's spans (docs/tracing.md); nil: OpenTelemetry's global one.
	TracerProvider trace.TracerProvider
	// Progress, when set, is called after each ledger poll.
	Progress func(Progress)
	// Stage, when set, is told in one line each step before publishing.
	Stage func(description string)
	// Notice, when set, is told when a stall or a stuck lease begins and when it ends.
	Notice func(Notice)
	// Warn, when set, is told each of Preflight.Warnings once the gates passed, before the
	// confirmation and before anything is published.
	Warn func(warning string)
}

const (
	// maxRate is the highest --rate taken literally: above it the interval between publishes
	// rounds towards zero, so a typo such as 1e12 would silently mean "no limit".
	maxRate            = 1e6
	defaultMaxInFlight = jobtype.DefaultMaxInFlight
	// maxMaxInFlight admits a backfill that puts a whole million-target job on the stream at
	// once and lets the consumer drain it; the bound holds no memory per target in flight.
	maxMaxInFlight       = 10_000_000
	defaultSettleTimeout = 5 * time.Minute
	defaultPollInterval  = time.Second
)

// Normalise checks every option, reporting all problems at once as an *OptionsError, and fills the
// defaults. Execute calls it first; callers may call it earlier to refuse bad input before
// connecting.
func (o *Options) Normalise() error {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	if o.Manifest == nil {
		add("no manifest given: pass the job.json that `replayctl plan` wrote")
	}
	if math.IsNaN(o.Rate) || math.IsInf(o.Rate, 0) || o.Rate < 0 || o.Rate > maxRate {
		add("--rate %v: must be 0 (no limit) or a number of events per second up to %d", o.Rate, int(maxRate))
	}
	if o.MaxInFlight == 0 {
		o.MaxInFlight = defaultMaxInFlight
	}
	if o.MaxInFlight < 1 || o.MaxInFlight > maxMaxInFlight {
		add("--max-in-flight %d: must be between 1 and %d", o.MaxInFlight, maxMaxInFlight)
	}
	for _, r := range []struct {
		flag  string
		value float64
		max   float64
	}{
		{"--max-calls-over", o.Guards.MaxCallsOver, math.MaxFloat64},
		{"--max-error-ratio", o.Guards.MaxErrorRatio, 1},
		{"--max-retrying-ratio", o.Guards.MaxRetryingRatio, 1},
		{"--max-drift", o.MaxDriftRatio, 1},
	} {
		if math.IsNaN(r.value) || r.value < 0 || r.value > r.max {
			if r.max == 1 {
				add("%s %v: must be a fraction between 0 and 1", r.flag, r.value)
			} else {
				add("%s %v: must be 0 or more", r.flag, r.value)
			}
		}
	}
	if o.Canary < NoCanary {
		add("--canary %d: must be 0 (no canary) or a number of targets", o.Canary)
	}
	if o.Guards.MaxUncertain < 0 {
		add("--max-uncertain %d: must be 0 or more", o.Guards.MaxUncertain)
	}
	if o.SettleTimeout == 0 {
		o.SettleTimeout = defaultSettleTimeout
	}
	if o.SettleTimeout < 0 {
		add("--settle-timeout %s: must be positive", o.SettleTimeout)
	}
	if o.PollInterval == 0 {
		o.PollInterval = defaultPollInterval
	}
	if o.PollInterval < 10*time.Millisecond || o.PollInterval > time.Minute {
		add("poll interval %s: must be between 10ms and 1m", o.PollInterval)
	}
	if o.Durable == "" && o.Manifest != nil {
		o.Durable = o.Manifest.Consumer
	}
	if err := validateDurable(o.Durable); err != nil {
		add("--durable %q: %v", clip.Runes(o.Durable, 64), err)
	}
	if o.Actor == "" {
		o.Actor = "unknown"
	}
	if o.Owner == "" {
		host, _ := os.Hostname()
		o.Owner = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if len(problems) > 0 {
		return &OptionsError{Problems: problems}
	}
	return nil
}

// validateDurable refuses what JetStream refuses in a consumer name (nats.go's own check), and any
// control character or invalid UTF-8, so the name can be quoted back safely; empty means unset.
func validateDurable(name string) error {
	switch {
	case !utf8.ValidString(name):
		return fmt.Errorf("is not valid UTF-8")
	case strings.ContainsAny(name, ">*. /\\"):
		return fmt.Errorf("is not a JetStream consumer name: it may not contain white space or any of > * . / \\")
	case strings.ContainsFunc(name, unicode.IsControl):
		return fmt.Errorf("contains a control character; give the durable's name as plain text")
	}
	return nil
}

func (o *Options) stage(format string, args ...any) {
	if o.Stage != nil {
		o.Stage(fmt.Sprintf(format, args...))
	}
}
