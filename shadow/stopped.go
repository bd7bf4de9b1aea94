package shadow

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/replayctl/replayctl/job"
	"github.com/replayctl/replayctl/jobtype"
	"github.com/replayctl/replayctl/ledger"
)

// returnTimeout bounds the ledger write that returns a stopped run's job: the run's own context
// is usually what ended (Ctrl-C), so the write runs without its cancellation.
const returnTimeout = 10 * time.Second

// stoppedAndReturned is stopped, after moving the job back from shadowing to prev, audited: a
// job left "shadowing" with nothing running reads as a run in progress forever. A run that lost
// its lock leaves the job alone, since another run may be shadowing it now.
func stoppedAndReturned(ctx context.Context, store Ledger, opts *Options, r *Report, prev jobtype.Status, err error) error {
	err = stopped(ctx, r.JobID, err)
	if errors.Is(context.Cause(ctx), ledger.ErrLockLost) {
		return err
	}
	event, ok := job.ShadowStoppedEvent(prev)
	if !ok {
		return err
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), returnTimeout)
	defer cancel()
	reason := "shadow stopped before its verdict: " + err.Error()
	rerr := store.ShadowStopped(wctx, job.Transition(event, r.JobID, "shadow stopped before its verdict", opts.Actor), ledger.AuditEntry{
		At: opts.Now().UTC(), Actor: opts.Actor, JobID: r.JobID, ManifestDigest: r.ManifestDigest, Action: "shadow.stopped",
		Details: map[string]any{"returnedTo": string(prev), "reason": reason, "interrupted": ctx.Err() != nil},
	})
	if rerr != nil {
		return errors.Join(err, fmt.Errorf("job %s stays shadowing: returning it to %s failed: %w", r.JobID, prev, rerr))
	}
	return fmt.Errorf("%w; job %s is %s again", err, r.JobID, prev)
}
