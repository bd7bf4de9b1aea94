package shadow

import (
	"fmt"
	"math"
	"path/filepath"
	"time"

	"github.com/replayctl/replayctl/internal/atomicfile"
	"github.com/replayctl/replayctl/manifest"
	"github.com/replayctl/replayctl/seal"
)

// Thresholds decide the verdict; each is a documented flag of `replayctl shadow`. They are used as
// given: start from DefaultThresholds, since a zero field is a strict threshold, not "default".
type Thresholds struct {
	// MaxErrorRatio (--max-error-ratio) bounds (shadow errors + targets missing from the DLQ +
	// requests NATS refused) / targets.
	MaxErrorRatio float64 `json:"maxErrorRatio"`
	// MaxUnansweredRatio (--max-unanswered-ratio) bounds (timeouts + no responder) / targets.
	MaxUnansweredRatio float64 `json:"maxUnansweredRatio"`
	// MaxFailureRatio (--max-failure-ratio) bounds terminal business failures / targets: what
	// execute's --max-error-ratio would stop on fails the shadow first.
	MaxFailureRatio float64 `json:"maxFailureRatio"`
	// MaxChangedRatio (--max-changed-ratio) bounds changed / targets compared with an original.
	MaxChangedRatio float64 `json:"maxChangedRatio"`
	// MaxCallsOverExpected (--max-calls-over) is the fraction by which the shadow's external calls
	// may exceed the manifest's expectedExternalCalls.
	MaxCallsOverExpected float64 `json:"maxCallsOver"`
}

// DefaultThresholds tolerates no shadow error, no business failure and no unanswered request,
// lets calls exceed the plan's estimate by 10%, and never fails on changes alone: a fix is
// expected to change results, and the operator reviews the diff.
func DefaultThresholds() Thresholds {
	return Thresholds{MaxErrorRatio: 0, MaxUnansweredRatio: 0, MaxFailureRatio: 0, MaxChangedRatio: 1, MaxCallsOverExpected: 0.10}
}

// Options is one shadow request.
type Options struct {
	// Manifest is the job's manifest, already loaded and verified by the caller.
	Manifest *manifest.Manifest
	// Concurrency is how many requests are in flight at once, 1..1024; 0 means 16.
	Concurrency int
	// Sample is the diff sample's size; 0 means 100, and it is capped at the number of targets.
	Sample int
	// Timeout bounds each request; 0 means 5s.
	Timeout time.Duration
	// IgnoreFields are result paths ("processedAt", "lines[*].sku") left out of every comparison.
	IgnoreFields []string
	// Thresholds decide the verdict, as given: a zero Thresholds is the strictest, not the default.
	Thresholds Thresholds
	// Actor is recorded in the audit log and on the verdict; empty means "unknown".
	Actor string
	// ReportPath is recorded with the verdict; the caller writes the file with WriteReport.
	ReportPath string
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Progress, when set, is called from one goroutine each time a target's outcome is counted.
	Progress func(done, total int64)
	// Stage, when set, is told in one line each step other than the full pass.
	Stage func(description string)
	// Keyring opens original result bodies the consumer SDK sealed (consumer.Config.ResultKeyring);
	// without it, or with a keyring lacking their key, they are compared on their hashes only.
	Keyring *seal.Keyring
}

const (
	defaultConcurrency = 16
	maxConcurrency     = 1024
	defaultSample      = 100
	// maxSample bounds the sample, whose items and values the report holds in memory.
	maxSample      = 10000
	defaultTimeout = 5 * time.Second
)

// Normalise checks every option, reporting all problems at once as an *OptionsError, and fills the
// defaults. Run calls it first; callers may call it earlier to refuse bad input before connecting.
func (o *Options) Normalise() error {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	if o.Manifest == nil {
		add("no manifest given: pass the job.json that `replayctl plan` wrote")
	}
	if o.Concurrency == 0 {
		o.Concurrency = defaultConcurrency
	}
	if o.Concurrency < 1 || o.Concurrency > maxConcurrency {
		add("--concurrency %d: must be between 1 and %d", o.Concurrency, maxConcurrency)
	}
	if o.Sample == 0 {
		o.Sample = defaultSample
	}
	if o.Sample < 1 || o.Sample > maxSample {
		add("--sample %d: must be between 1 and %d (0 means %d)", o.Sample, maxSample, defaultSample)
	}
	if o.Timeout == 0 {
		o.Timeout = defaultTimeout
	}
	if o.Timeout < 0 {
		add("--timeout %s: must be positive", o.Timeout)
	}
	for _, f := range o.IgnoreFields {
		if err := validatePath(f); err != nil {
			add("--ignore-field %q: %v", f, err)
		}
	}
	for _, r := range []struct {
		flag  string
		value float64
		max   float64
	}{
		{"--max-error-ratio", o.Thresholds.MaxErrorRatio, 1},
		{"--max-unanswered-ratio", o.Thresholds.MaxUnansweredRatio, 1},
		{"--max-failure-ratio", o.Thresholds.MaxFailureRatio, 1},
		{"--max-changed-ratio", o.Thresholds.MaxChangedRatio, 1},
		{"--max-calls-over", o.Thresholds.MaxCallsOverExpected, math.MaxFloat64},
	} {
		if math.IsNaN(r.value) || r.value < 0 || r.value > r.max {
			if r.max == 1 {
				add("%s %v: must be a fraction between 0 and 1", r.flag, r.value)
			} else {
				add("%s %v: must be 0 or more", r.flag, r.value)
			}
		}
	}
	if o.ReportPath != "" {
		if dir := filepath.Dir(o.ReportPath); !atomicfile.DirExists(dir) {
			add("report %s: directory %s does not exist; create it or write the report elsewhere", o.ReportPath, dir)
		}
	}
	if o.Actor == "" {
		o.Actor = "unknown"
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if len(problems) > 0 {
		return &OptionsError{Problems: problems}
	}
	return nil
}
