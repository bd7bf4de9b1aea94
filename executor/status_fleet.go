package executor

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// statusNATSTimeout bounds status's whole JetStream part, the connection included: NATS down
// leaves the durable's counts out of the report and never fails or hangs status.
const statusNATSTimeout = 3 * time.Second

// StatusOptions say what a status report reads besides the ledger.
type StatusOptions struct {
	JobID string
	// JetStream connects to NATS for the durable's counts; nil leaves them out. Watch connects
	// once and keeps the connection; a failure is the report's DurableNote.
	JetStream func(ctx context.Context) (jetstream.JetStream, func(), error)
}

// DurableState is the durable consumer the job's replays reach, as JetStream reports it.
// Durable names the JetStream consumer a job's replays land in: `durable` is this object in every
// --json document.
type Durable struct {
	Stream string `json:"stream"`
	Name   string `json:"name"`
}

// DurableState is a durable with its counts.
type DurableState struct {
	Durable
	// Pending messages are not yet delivered; AckPending delivered and not acknowledged;
	// Redelivered delivered more than once and not yet acknowledged; WaitingPulls the pull
	// requests the consumer instances have outstanding (0: nobody pulls).
	Pending      uint64 `json:"pending"`
	AckPending   int    `json:"ackPending"`
	Redelivered  int    `json:"redelivered"`
	WaitingPulls int    `json:"waitingPulls"`
}

// StatusOf reads jobID's report with the consumer instances' shares and, when o.JetStream is
// set, the durable's counts.
func StatusOf(ctx context.Context, store Ledger, o StatusOptions) (*StatusReport, error) {
	r, err := Status(ctx, store, o.JobID)
	if err != nil || o.JetStream == nil {
		return r, err
	}
	jctx, cancel := context.WithTimeout(ctx, statusNATSTimeout)
	defer cancel()
	js, closeJS, err := o.JetStream(jctx)
	if err != nil {
		r.DurableNote = fmt.Sprintf("the durable's counts are left out: NATS is unreachable (%v)", err)
		return r, nil
	}
	defer closeJS()
	readDurableState(jctx, store, js, r)
	return r, nil
}

// readDurableState fills r.Durable, or r.DurableNote with why it could not. The durable is the
// one the last run throttled on, else the SDK's default (the consumer's name) on the stream
// that captures the targets' subject.
func readDurableState(ctx context.Context, store Ledger, js jetstream.JetStream, r *StatusReport) {
	stream, durable := "", r.Consumer
	if r.Executor != nil && r.Executor.Durable != nil {
		stream, durable = r.Executor.Durable.Stream, r.Executor.Durable.Name
	}
	if stream == "" {
		subject, err := store.JobTargetsAnySubject(ctx, r.JobID)
		if err != nil || subject == "" {
			r.DurableNote = "the durable's counts are left out: the job has no target subject to find its stream by"
			return
		}
		if stream, err = js.StreamNameBySubject(ctx, subject); err != nil {
			r.DurableNote = fmt.Sprintf("the durable's counts are left out: no stream found for %s (%v)", subject, err)
			return
		}
	}
	c, err := js.Consumer(ctx, stream, durable)
	if err != nil {
		r.DurableNote = fmt.Sprintf("the durable's counts are left out: durable %s of stream %s could not be read (%v)", durable, stream, err)
		return
	}
	info, err := c.Info(ctx)
	if err != nil {
		r.DurableNote = fmt.Sprintf("the durable's counts are left out: durable %s of stream %s could not be read (%v)", durable, stream, err)
		return
	}
	r.Durable = &DurableState{Durable: Durable{Stream: stream, Name: durable}, Pending: info.NumPending, AckPending: info.NumAckPending,
		Redelivered: info.NumRedelivered, WaitingPulls: info.NumWaiting}
}
