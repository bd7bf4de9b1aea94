package reconcile

import (
	"fmt"
	"time"

	"github.com/replayctl/replayctl/protocol"
)

// Options is one reconcile request.
type Options struct {
	// Consumer names the consumer whose uncertain rows are reconciled (required).
	Consumer string
	// JobID keeps only the rows written by one replay job; empty keeps every row.
	JobID string
	// OlderThan keeps only rows uncertain for at least this long; 0 keeps all. A row that became
	// uncertain a moment ago may belong to a provider call still settling.
	OlderThan time.Duration
	// Due keeps only rows due for a look-up (ledger.UncertainFilter.Due): never asked, or asked
	// long enough ago, the wait doubling with the row's age. The consumer SDK's reconcile worker
	// sets it, so a row the look-up cannot settle is not asked about on every pass.
	Due bool
	// DryRun asks the look-ups and reports their verdicts, and changes nothing.
	DryRun bool
	// Timeout bounds each look-up request; 0 means 5s.
	Timeout time.Duration
	// Concurrency is how many look-ups are in flight at once; 0 means 4.
	Concurrency int
	// Max is the most rows one run asks about; the rest are left for the next run (the report
	// says so). 0 means 1000.
	Max int
	// Actor is recorded on the rows and in the audit log; empty means "unknown".
	Actor string
	// Confirm is asked, once every look-up answered, whether to apply the verdicts; false changes
	// nothing and returns ErrNotConfirmed. nil applies them (--yes).
	Confirm func(*Report) (bool, error)
	// Progress, when set, is told how many look-ups of total were answered.
	Progress func(done, total int64)
	// Stage, when set, is told in one line each step.
	Stage func(description string)
}

const (
	defaultTimeout     = 5 * time.Second
	maxTimeout         = 5 * time.Minute
	defaultConcurrency = 4
	maxConcurrency     = 64
	defaultMax         = 1000
	maxMax             = 100000
)

// Normalise checks every option, reporting all problems at once as an *OptionsError, and fills
// the defaults. Run calls it first; callers may call it earlier to refuse bad input before
// connecting.
func (o *Options) Normalise() error {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	if o.Consumer == "" {
		add("--consumer is required: the consumer whose uncertain ledger rows to reconcile")
	} else if err := protocol.ValidateConsumerName(o.Consumer); err != nil {
		add("--consumer %q: %v", o.Consumer, err)
	}
	if o.OlderThan < 0 {
		add("--older-than %s: must be 0 (every row) or a positive duration, e.g. 1h", o.OlderThan)
	}
	if o.Timeout == 0 {
		o.Timeout = defaultTimeout
	}
	if o.Timeout < 0 || o.Timeout > maxTimeout {
		add("--timeout %s: must be positive and at most %s", o.Timeout, maxTimeout)
	}
	if o.Concurrency == 0 {
		o.Concurrency = defaultConcurrency
	}
	if o.Concurrency < 1 || o.Concurrency > maxConcurrency {
		add("--concurrency %d: must be between 1 and %d", o.Concurrency, maxConcurrency)
	}
	if o.Max == 0 {
		o.Max = defaultMax
	}
	if o.Max < 1 || o.Max > maxMax {
		add("--max %d: must be between 1 and %d", o.Max, maxMax)
	}
	if o.Actor == "" {
		o.Actor = "unknown"
	}
	if len(problems) > 0 {
		return &OptionsError{Problems: problems}
	}
	return nil
}

func (o *Options) stage(format string, args ...any) {
	if o.Stage != nil {
		o.Stage(fmt.Sprintf(format, args...))
	}
}
