package planner_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/replayctl/replayctl/dlq"
	"github.com/replayctl/replayctl/internal/testenv/natstest"
	"github.com/replayctl/replayctl/internal/testenv/pgtest"
	"github.com/replayctl/replayctl/planner"
)

// A DLQ message that the server stored can still be too large to replay: execute adds the replay
// headers. Plan must count and list it, name the fix, and keep it out of the targets, so the job
// is not blocked by a publish no retry can make (issue 16 item 4).
func TestPlanKeepsOutMessagesWhoseReplayExceedsMaxPayload(t *testing.T) {
	t.Parallel()
	const maxPayload = 4096
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	env := natstest.StartMaxPayload(t, maxPayload)
	if _, err := env.JS.CreateStream(ctx, jetstream.StreamConfig{Name: "DLQ", Subjects: []string{"dlq.>"}}); err != nil {
		t.Fatal(err)
	}
	store := pgtest.Ledger(t)
	f := &fixture{t: t, ctx: ctx, js: env.JS, store: store, db: pgtest.Pool(t, store), dir: t.TempDir()}
	opts := f.options(func(o *planner.Options) { o.JobID = "job-maxpayload" })
	replay := dlq.Replay{JobID: opts.JobID, EffectVersion: 1}

	// deadLetter stores a DLQ message whose replay is exactly replaySize bytes.
	deadLetter := func(eventID string, replaySize int) (uint64, *nats.Msg) {
		t.Helper()
		msg := dlq.DeadLetter{Subject: "dlq.billing", EventID: eventID, OriginalSubject: "billing.charge.requested",
			Class: "timeout", Attempts: 5, FailedAt: time.Now(), Carried: nats.Header{"Traceparent": {"00-abc-01"}}}.Msg()
		r := replay
		r.EventID = eventID
		msg.Data = []byte(strings.Repeat("x", replaySize-dlq.ReplaySize(nil, msg.Header, dlq.DefaultHeaders, r)))
		ack, err := env.JS.PublishMsg(ctx, msg)
		if err != nil {
			t.Fatalf("store the DLQ message of %s (%d bytes, under max_payload %d): %v", eventID, msg.Size(), maxPayload, err)
		}
		return ack.Sequence, dlq.ReplayMsg("billing.charge.requested", msg.Data, msg.Header, dlq.DefaultHeaders, r)
	}
	_, atLimit := deadLetter("e-at-limit", maxPayload)
	overSeq, over := deadLetter("e-over", maxPayload+1)
	wayOverSeq, _ := deadLetter("e-way-over", maxPayload+8)
	f.dlq("dlq.billing", "e-small", "timeout", `{"n":1}`)

	// The sizes are what the server decides on, not an estimate.
	if err := env.Conn.PublishMsg(atLimit); err != nil {
		t.Fatalf("a replay of exactly max_payload refused: %v", err)
	}
	if err := env.Conn.PublishMsg(over); !errors.Is(err, nats.ErrMaxPayload) {
		t.Fatalf("a replay one byte over max_payload: %v, want %v", err, nats.ErrMaxPayload)
	}

	res, err := planner.Plan(ctx, f.js, f.store, opts)
	if err != nil {
		t.Fatal(err)
	}
	m := res.Manifest
	if m.Stats.OverMaxPayload != 2 || m.Stats.Scanned != 4 {
		t.Fatalf("overMaxPayload %d of %d scanned, want 2 of 4", m.Stats.OverMaxPayload, m.Stats.Scanned)
	}
	if got, want := m.Excluded.OverMaxPayloadSeqs, []uint64{overSeq, wayOverSeq}; !reflect.DeepEqual(got, want) {
		t.Fatalf("excluded.overMaxPayloadSeqs %v, want %v", got, want)
	}
	if want := []string{"e-at-limit", "e-small"}; !reflect.DeepEqual(m.EventIDs, want) {
		t.Fatalf("targets %v, want %v", m.EventIDs, want)
	}
	fix := fmt.Sprintf("raise max_payload in the server's configuration to at least %d", maxPayload+8)
	if !slices.ContainsFunc(res.Warnings, func(w string) bool {
		return strings.HasPrefix(w, "2 messages") && strings.Contains(w, fix) && strings.Contains(w, "max_payload of 4096 bytes")
	}) {
		t.Fatalf("warnings %q, want the 2 messages counted with the fix %q", res.Warnings, fix)
	}
}
