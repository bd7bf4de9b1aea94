package shadow_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/replayctl/replayctl/fingerprint"
	"github.com/replayctl/replayctl/internal/testenv/natstest"
	"github.com/replayctl/replayctl/internal/testenv/pgtest"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/ledger/ledgertest"
	"github.com/replayctl/replayctl/manifest"
	"github.com/replayctl/replayctl/planner"
	"github.com/replayctl/replayctl/protocol"
	"github.com/replayctl/replayctl/shadow"
)

var planNow = time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)

type fixture struct {
	t     testing.TB
	ctx   context.Context
	env   *natstest.Env
	store *ledger.Store
	// db is the test's own pool on the store's schema, for rows and assertions shadow does not make.
	db   *pgxpool.Pool
	dir  string
	seqs map[string]uint64
	// originals wait for plan: a DLQ plan keeps out events completed under any version (issue
	// 14), and the shadow compares with what the ledger holds when it runs.
	originals []func()
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	store := pgtest.Ledger(t)
	env := natstest.Start(t, false)
	if _, err := env.JS.CreateStream(ctx, jetstream.StreamConfig{Name: "DLQ", Subjects: []string{"dlq.>"}}); err != nil {
		t.Fatal(err)
	}
	return &fixture{t: t, ctx: ctx, env: env, store: store, db: pgtest.Pool(t, store), dir: t.TempDir(), seqs: map[string]uint64{}}
}

// charge is the test consumer's payload.
type charge struct {
	AmountCents int    `json:"amountCents"`
	SKU         string `json:"sku,omitempty"`
	// Plain results carry no processedAt, so they hash the same on every run.
	Plain bool `json:"plain,omitempty"`
	// Fail makes the responder answer status error.
	Fail bool `json:"fail,omitempty"`
}

// result is the test consumer's handler: version 2 charges 5 cents more on amounts of 5000 and up
// and writes SKUs in upper case; processedAt differs on every call.
func result(c charge, version int, at time.Time) json.RawMessage {
	fee := c.AmountCents / 100
	sku := c.SKU
	if version >= 2 {
		if c.AmountCents >= 5000 {
			fee += 5
		}
		sku = strings.ToUpper(sku)
	}
	r := map[string]any{"amountCents": c.AmountCents, "feeCents": fee}
	if sku != "" {
		r["lines"] = []any{map[string]any{"sku": sku, "qty": 1}}
	}
	if !c.Plain {
		r["processedAt"] = at.Format(time.RFC3339Nano)
	}
	out, err := json.Marshal(r)
	if err != nil {
		panic(err)
	}
	return out
}

func payloadOf(c charge) string {
	out, err := json.Marshal(c)
	if err != nil {
		panic(err)
	}
	return string(out)
}

// dlq publishes one DLQ message for eventID and remembers its stream sequence.
func (f *fixture) dlq(eventID, reason string, c charge) {
	f.t.Helper()
	msg := nats.NewMsg("dlq.billing")
	msg.Data = []byte(payloadOf(c))
	msg.Header.Set("Event-Id", eventID)
	msg.Header.Set("Dlq-Reason", reason)
	msg.Header.Set("Dlq-Original-Subject", "billing.charge.requested")
	ack, err := f.env.JS.PublishMsg(f.ctx, msg)
	if err != nil {
		f.t.Fatal(err)
	}
	f.seqs[eventID] = ack.Sequence
}

// original records eventID as completed under version 1 with the v1 result as its body, right
// after the next plan.
func (f *fixture) original(eventID string, c charge) {
	f.originals = append(f.originals, func() { f.recordOriginal(eventID, c) })
}

func (f *fixture) recordOriginal(eventID string, c charge) {
	f.t.Helper()
	body := result(c, 1, planNow.Add(-24*time.Hour))
	_, err := f.store.EffectsImport(f.ctx, []ledger.EffectRow{{
		Consumer: "billing", EventID: eventID, EffectVersion: 1, State: "completed",
		RequestHash: fingerprint.Payload([]byte(payloadOf(c))), RequestHashAlg: fingerprint.Algorithm,
		ResultHash: fingerprint.Payload(body), ResultBody: body, EffectCount: 1,
	}})
	if err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) exec(sql string, args ...any) {
	f.t.Helper()
	if _, err := f.db.Exec(f.ctx, sql, args...); err != nil {
		f.t.Fatalf("%s: %v", sql, err)
	}
}

// seedStandard is the DLQ most tests shadow: nine targets over three failure reasons, six with an
// original under version 1. Against version 2: e01, e03 and e05 are identical (e05 on its hash
// only), e02, e04 and e06 changed (e06 on its hash: its body is past replay_until), e07-e09 have
// no original.
func (f *fixture) seedStandard() {
	f.t.Helper()
	targets := []struct {
		id, reason string
		c          charge
		original   bool
	}{
		{"e01", "timeout", charge{AmountCents: 1200, SKU: "abc"}, true},
		{"e02", "timeout", charge{AmountCents: 7000, SKU: "def"}, true},
		{"e03", "timeout", charge{AmountCents: 1500}, true},
		{"e04", "timeout", charge{AmountCents: 9000}, true},
		{"e05", "http 503", charge{AmountCents: 1000, Plain: true}, true},
		{"e06", "http 503", charge{AmountCents: 8000, SKU: "x"}, true},
		{"e07", "http 503", charge{AmountCents: 1100, SKU: "q"}, false},
		{"e08", "bad schema", charge{AmountCents: 6000}, false},
		{"e09", "bad schema", charge{AmountCents: 1300}, false},
	}
	for _, tg := range targets {
		f.dlq(tg.id, tg.reason, tg.c)
		if tg.original {
			f.original(tg.id, tg.c)
		}
	}
	// A completed event outside the DLQ puts version 1 in the ledger, so the job replays under 2.
	f.recordOriginal("hist-1", charge{AmountCents: 100})
	f.originals = append(f.originals, func() {
		ledgertest.ForgetResultBodies(f.t, f.db, "e05")
		ledgertest.EndWindows(f.t, f.db, time.Hour, 0, "e06")
	})
}

// standardJob is a fixture with the standard DLQ, planned.
func standardJob(t *testing.T) (*fixture, *manifest.Manifest) {
	t.Helper()
	f := newFixture(t)
	f.seedStandard()
	return f, f.plan()
}

// plan plans the DLQ into a job with a fixed ID and clock, so its digest and sample are the same
// on every test run.
func (f *fixture) plan() *manifest.Manifest {
	f.t.Helper()
	res, err := planner.Plan(f.ctx, f.env.JS, f.store, planner.Options{
		Consumer: "billing", NewConsumer: true, Stream: "DLQ", Reason: "fee rounding fixed in INC-77; re-run the failed charges",
		OutputPath: filepath.Join(f.dir, "job.json"), Overwrite: true, Actor: "alice", Now: planNow, JobID: "job-shadow-test",
	})
	if err != nil {
		f.t.Fatal(err)
	}
	for _, record := range f.originals {
		record()
	}
	f.originals = nil
	return res.Manifest
}

// options are a run's defaults in the tests: short timeouts, the SKU case change ignored.
func (f *fixture) options(m *manifest.Manifest, mod func(*shadow.Options)) shadow.Options {
	o := shadow.Options{
		Manifest: m, Concurrency: 4, Sample: 4, Timeout: 2 * time.Second, Actor: "bob",
		IgnoreFields: []string{"lines[*].sku"}, Thresholds: shadow.DefaultThresholds(),
		ReportPath: filepath.Join(f.dir, "job.shadow.json"),
	}
	if mod != nil {
		mod(&o)
	}
	return o
}

func (f *fixture) run(o shadow.Options) (*shadow.Report, error) {
	return shadow.Run(f.ctx, f.env.Conn, f.env.JS, f.store, o)
}

func (f *fixture) mustRun(o shadow.Options) *shadow.Report {
	f.t.Helper()
	r, err := f.run(o)
	if err != nil {
		f.t.Fatal(err)
	}
	return r
}

// behaviour decides what the test responder does with request n (counted from 1): reply says
// whether to answer at all, effects how many external calls the reply reports.
type behaviour struct {
	reply   func(n int64) bool
	effects int
}

// responder is a real NATS shadow responder speaking protocol/: it checks each request's headers
// like the SDK does and answers with result().
type responder struct {
	requests atomic.Int64
	sub      *nats.Subscription
}

func (f *fixture) serve(b behaviour) *responder {
	f.t.Helper()
	r := &responder{}
	if b.reply == nil {
		b.reply = func(int64) bool { return true }
	}
	if b.effects == 0 {
		b.effects = 1
	}
	sub, err := f.env.Conn.QueueSubscribe(protocol.ShadowSubject("billing"), protocol.ShadowQueueGroup, func(msg *nats.Msg) {
		n := r.requests.Add(1)
		if !b.reply(n) {
			return
		}
		rep := f.answer(msg, b.effects)
		data, err := json.Marshal(rep)
		if err != nil {
			f.t.Error(err)
			return
		}
		if err := msg.Respond(data); err != nil {
			f.t.Error(err)
		}
	})
	if err != nil {
		f.t.Fatal(err)
	}
	r.sub = sub
	f.t.Cleanup(func() { _ = sub.Unsubscribe() })
	return r
}

func (f *fixture) answer(msg *nats.Msg, effects int) protocol.ShadowReply {
	eventID := msg.Header.Get(protocol.HeaderEventID)
	rep := protocol.ShadowReply{EventID: eventID, Status: protocol.StatusError, Effects: []protocol.Effect{}}
	version, err := strconv.Atoi(msg.Header.Get(protocol.HeaderReplayEffectVersion))
	switch {
	case msg.Header.Get(protocol.HeaderReplayMode) != protocol.ModeShadow:
		rep.Error = "Replay-Mode is not shadow"
	case msg.Header.Get(protocol.HeaderReplayJob) == "":
		rep.Error = "no Replay-Job"
	case msg.Header.Get(protocol.HeaderReplayWriteForbidden) != "false":
		rep.Error = "Replay-Write-Forbidden is not false"
	case err != nil || version < 1:
		rep.Error = "bad Replay-Effect-Version"
	}
	if rep.Error != "" {
		f.t.Errorf("shadow request for %s: %s", eventID, rep.Error)
		return rep
	}
	var c charge
	if err := json.Unmarshal(msg.Data, &c); err != nil {
		rep.Error = "payload is not a charge: " + err.Error()
		return rep
	}
	for i := range effects {
		rep.Effects = append(rep.Effects, protocol.Effect{Kind: "payments.charge", Target: fmt.Sprintf("payments-api/%d", i), Suppressed: true})
	}
	if c.Fail {
		rep.Error = "payments-api: connection refused"
		return rep
	}
	rep.Status = protocol.StatusOK
	rep.Result = result(c, version, time.Now())
	rep.ResultHash = fingerprint.Payload(rep.Result)
	return rep
}

// stored is one target's shadow columns as job_targets holds them.
type stored struct {
	Status, ShadowStatus, Comparison, ComparedOn, Error string
	EffectCount                                         *int
}

func (f *fixture) stored(jobID string) map[string]stored {
	f.t.Helper()
	rows, err := f.db.Query(f.ctx, `
		select event_id, status, coalesce(shadow_status, ''), coalesce(shadow_comparison, ''),
		       coalesce(shadow_compared_on, ''), coalesce(shadow_error, ''), shadow_effect_count
		  from job_targets where job_id = $1`, jobID)
	if err != nil {
		f.t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]stored{}
	for rows.Next() {
		var id string
		var s stored
		if err := rows.Scan(&id, &s.Status, &s.ShadowStatus, &s.Comparison, &s.ComparedOn, &s.Error, &s.EffectCount); err != nil {
			f.t.Fatal(err)
		}
		out[id] = s
	}
	if err := rows.Err(); err != nil {
		f.t.Fatal(err)
	}
	return out
}

func (f *fixture) jobStatus(id string) string {
	f.t.Helper()
	job, err := f.store.JobsGet(f.ctx, id)
	if err != nil {
		f.t.Fatal(err)
	}
	return string(job.Status)
}
