package executor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/replayctl/replayctl/jobtype"
	"github.com/replayctl/replayctl/ledger"
)

// durableInfoTimeout bounds each read of the durable's info from JetStream.
const durableInfoTimeout = 5 * time.Second

// stalled stops the run when published targets have had no outcome land in the ledger for
// --settle-timeout, whatever the run is doing: throttled by the window, still publishing (a
// wide window fills for a long time with nobody consuming), or waiting for the last outcomes.
// Only an outcome landing, a pause, or nothing being in flight resets the clock; publishing
// more does not, because it says nothing about whether anyone consumes.
func (w *watcher) stalled(ctx context.Context, rec ledger.Job, p Progress, e ledger.JobEffectCounts) *Stop {
	s := w.s
	w.st.mu.Lock()
	inFlight := w.st.inFlight()
	w.st.mu.Unlock()
	if settled := e.Settled(); settled != w.lastSettled || inFlight <= 0 || rec.Status == jobtype.Paused {
		switch {
		case settled != w.lastSettled:
			w.endStall("outcomes land again", settled)
		case rec.Status == jobtype.Paused:
			w.endStall("the job is paused", settled)
		default:
			w.endStall("nothing is in flight", settled)
		}
		w.lastSettled, w.lastChange = settled, time.Now()
		return nil
	}
	quiet := time.Since(w.lastChange)
	if !w.stallNoticed && quiet > stallNoticeAfter(s.opts) {
		w.stallNoticed = true
		s.opts.notice(NoticeStall, "stalled: %d published targets, no outcome for %s; the run stops at --settle-timeout %s. %s",
			inFlight, quiet.Round(time.Second), s.opts.SettleTimeout, w.durableSays(ctx))
	}
	if quiet <= s.opts.SettleTimeout {
		return nil
	}
	stuck := ""
	if p.InProgress > 0 {
		// In progress and not moving: leases of a consumer that died, and maybe no message left.
		stuck = fmt.Sprintf(" %d are in progress in the ledger: leases whose consumer died with no message left show in "+
			"`replayctl ledger stats --consumer %s` as stuck after 15 minutes; `replayctl reconcile` settles those with a call started.",
			p.InProgress, rec.Consumer)
	}
	return &Stop{Kind: StopStalled, Message: fmt.Sprintf(
		"%d published targets, no outcome for %s: is any consumer instance running? %s; or did it dead-letter them?%s "+
			"The job stays executing: run execute again to keep waiting, or see `replayctl status %s`",
		inFlight, s.opts.SettleTimeout, w.durableSays(ctx), stuck, rec.ID)}
}

// endStall reports the end of a stall that was reported, once.
func (w *watcher) endStall(why string, settled int64) {
	if !w.stallNoticed {
		return
	}
	w.stallNoticed = false
	w.s.opts.notice(NoticeStallOver, "stall over after %s: %s (%d targets settled)", time.Since(w.lastChange).Round(time.Second), why, settled)
}

// durableSays reads the durable's state from JetStream for the stall message: how many pull
// requests wait on it (none means no instance is pulling) and what it holds.
func (w *watcher) durableSays(ctx context.Context) string {
	s := w.s
	ictx, cancel := context.WithTimeout(ctx, durableInfoTimeout)
	defer cancel()
	stream := s.stream
	if stream == "" {
		// A run with nothing left to publish never looked the stream up: find it by the subject
		// the targets were published to.
		if subject, err := s.store.JobTargetsAnySubject(ictx, s.job.ID); err == nil && subject != "" {
			stream, _ = s.js.StreamNameBySubject(ictx, subject)
		}
	}
	if stream == "" {
		return fmt.Sprintf("durable %s: the stream the replay publishes into was not found, so its state is unknown", s.opts.Durable)
	}
	c := w.durable
	if c == nil {
		var err error
		if c, err = s.js.Consumer(ictx, stream, s.opts.Durable); err != nil {
			if errors.Is(err, jetstream.ErrConsumerNotFound) {
				return fmt.Sprintf("durable %s does not exist on stream %s: no consumer instance has started, or --durable names another", s.opts.Durable, stream)
			}
			return fmt.Sprintf("durable %s on stream %s could not be read (%v)", s.opts.Durable, stream, err)
		}
	}
	info, err := c.Info(ictx)
	if err != nil {
		return fmt.Sprintf("durable %s on stream %s could not be read (%v)", s.opts.Durable, stream, err)
	}
	return fmt.Sprintf("durable %s has %d active pull requests, %d messages pending, %d delivered and not acknowledged",
		s.opts.Durable, info.NumWaiting, info.NumPending, info.NumAckPending)
}
