package executor

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/replayctl/replayctl/fault"
	"github.com/replayctl/replayctl/job"
	"github.com/replayctl/replayctl/jobtype"
	"github.com/replayctl/replayctl/ledger"
)

// ErrNotDrainable matches a drain refused for the job it names: not finished, planned from a
// backfill's source stream, or whose stream was recreated since plan (exit code 3).
var ErrNotDrainable = fault.New(fault.Refused, "job cannot be drained")

// drainPage is how many targets' sequences are read from the ledger at a time.
const drainPage = 5000

// messageGone reports whether a delete failed only because the sequence holds no message any
// more. nats.go flattens the server's answer (err_code 10057, "no message found") into the text
// of ErrMsgDeleteUnsuccessful, so the text is all there is to tell it from a real failure.
func messageGone(err error) bool {
	return errors.Is(err, jetstream.ErrMsgNotFound) ||
		(errors.Is(err, jetstream.ErrMsgDeleteUnsuccessful) && strings.Contains(err.Error(), "err_code=10057"))
}

// DrainOptions is one drain request.
type DrainOptions struct {
	JobID string
	Actor string
	// Progress, when set, is told the messages handled so far.
	Progress func(deleted int64)
}

// DrainResult says what a drain removed from the job's DLQ stream.
type DrainResult struct {
	JobID  string `json:"jobId"`
	Stream string `json:"stream"`
	// Deleted counts the messages removed; AlreadyGone those no longer in the stream (an earlier
	// drain, a limit, a hand delete).
	Deleted     int64 `json:"deleted"`
	AlreadyGone int64 `json:"alreadyGone"`
}

// Drain deletes the DLQ messages of jobID's completed targets from its DLQ stream, by the stream
// sequences recorded at plan time, so the DLQ shows what is left (as SQS redrive moves messages
// out). Only a finished job is drained: a running one still reads its messages. A backfill's
// source stream is never touched. Without a drain the next plan still keeps the done events out;
// a drain only tidies the DLQ. It is recorded in the audit log and may be repeated.
func Drain(ctx context.Context, js jetstream.JetStream, store Ledger, opts DrainOptions) (*DrainResult, error) {
	rec, err := store.JobsGet(ctx, opts.JobID)
	if err != nil {
		return nil, err
	}
	switch {
	case rec.SourceKind == jobtype.SourceBackfill:
		return nil, fmt.Errorf("%w: job %s is a backfill: its stream %s holds the original messages, the system of record, and is never drained",
			ErrNotDrainable, rec.ID, rec.Stream)
	case !job.Final(rec.Status):
		return nil, fmt.Errorf("%w: job %s is %s; drain it once it completed (or was cancelled): until then execute still reads its DLQ messages",
			ErrNotDrainable, rec.ID, rec.Status)
	}
	stream, err := js.Stream(ctx, rec.Stream)
	if err != nil {
		return nil, fmt.Errorf("drain job %s: look up its DLQ stream %s: %w", rec.ID, rec.Stream, err)
	}
	// Sequences are only meaningful in the stream they were read from: one deleted and created
	// again under the same name numbers other messages.
	if created := stream.CachedInfo().Created; created.After(rec.CreatedAt) {
		return nil, fmt.Errorf("%w: stream %s was created at %s, after job %s was planned (%s): its sequences are not the job's; nothing was deleted",
			ErrNotDrainable, rec.Stream, created.UTC().Format("2006-01-02T15:04:05Z"), rec.ID, rec.CreatedAt.UTC().Format("2006-01-02T15:04:05Z"))
	}
	res := &DrainResult{JobID: rec.ID, Stream: rec.Stream}
	err = store.JobTargetsCompletedSeqs(ctx, rec.ID, drainPage, func(seqs []uint64) error {
		for _, seq := range seqs {
			switch err := stream.DeleteMsg(ctx, seq); {
			case messageGone(err):
				res.AlreadyGone++
			case err != nil:
				return fmt.Errorf("drain job %s: delete message %d of stream %s: %w; %d deleted so far, run drain again to finish",
					rec.ID, seq, rec.Stream, err, res.Deleted)
			default:
				res.Deleted++
			}
		}
		if opts.Progress != nil {
			opts.Progress(res.Deleted + res.AlreadyGone)
		}
		return nil
	})
	entry := ledger.AuditEntry{Actor: opts.Actor, JobID: rec.ID, ManifestDigest: rec.ManifestDigest, Action: "drain",
		Details: map[string]any{"stream": rec.Stream, "deleted": res.Deleted, "alreadyGone": res.AlreadyGone, "complete": err == nil}}
	if auditErr := store.AuditAppend(context.WithoutCancel(ctx), entry); auditErr != nil && err == nil {
		err = fmt.Errorf("drain job %s: %d messages deleted, but the audit entry was not recorded: %w", rec.ID, res.Deleted, auditErr)
	}
	if err != nil {
		return res, err
	}
	return res, nil
}
