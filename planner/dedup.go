package planner

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/replayctl/replayctl/protocol"
)

// dedupWindow measures the job against the duplicate window of the stream that will capture its
// replays: the source stream of a backfill, the stream of the first target's original subject for a
// DLQ replay (the one execute's subject gate checks). The rate is execute's, not known yet, so the
// window is judged by the rate the job needs to fit in it. nil when no stream captures the subject:
// execute's gate refuses that job, and says why.
func dedupWindow(ctx context.Context, js jetstream.JetStream, o *Options, subject string, targets int64) (*protocol.DedupWindow, error) {
	name := o.Stream
	if !o.Backfill {
		var err error
		name, err = js.StreamNameBySubject(ctx, subject)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("find the stream that captures %s, the replays' subject: %w", subject, err)
		}
	}
	stream, err := js.Stream(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("read the duplicate window of stream %s: %w", name, err)
	}
	d := protocol.NewDedupWindow(name, stream.CachedInfo().Config.Duplicates, targets, 0, true)
	return &d, nil
}
