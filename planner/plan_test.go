package planner_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/replayctl/replayctl/fingerprint"
	"github.com/replayctl/replayctl/internal/testenv/natstest"
	"github.com/replayctl/replayctl/internal/testenv/pgtest"
	"github.com/replayctl/replayctl/jobtype"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/ledger/ledgertest"
	"github.com/replayctl/replayctl/manifest"
	"github.com/replayctl/replayctl/planner"
)

const goodReason = "payments provider outage INC-4521 fixed; re-run failed charges"

var planNow = time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)

type fixture struct {
	t     testing.TB
	ctx   context.Context
	js    jetstream.JetStream
	store *ledger.Store
	// db is the test's own pool on the store's schema, for rows and assertions plan does not make.
	db  *pgxpool.Pool
	dir string
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	t.Cleanup(cancel)
	store := pgtest.Ledger(t)
	env := natstest.Start(t, false)
	if _, err := env.JS.CreateStream(ctx, jetstream.StreamConfig{Name: "DLQ", Subjects: []string{"dlq.>"}}); err != nil {
		t.Fatal(err)
	}
	return &fixture{t: t, ctx: ctx, js: env.JS, store: store, db: pgtest.Pool(t, store), dir: t.TempDir()}
}

// dlq publishes one DLQ message; an empty eventID leaves the Event-Id header out.
func (f *fixture) dlq(subject, eventID, reason, payload string) uint64 {
	f.t.Helper()
	msg := nats.NewMsg(subject)
	msg.Data = []byte(payload)
	if eventID != "" {
		msg.Header.Set("Event-Id", eventID)
	}
	msg.Header.Set("Dlq-Reason", reason)
	msg.Header.Set("Dlq-Original-Subject", "billing.charge.requested")
	msg.Header.Set("Dlq-Attempts", "5")
	ack, err := f.js.PublishMsg(f.ctx, msg)
	if err != nil {
		f.t.Fatal(err)
	}
	return ack.Sequence
}

func (f *fixture) effect(eventID, state, payload string, effectCount int, leaseExpires *time.Time) {
	f.t.Helper()
	_, err := f.store.EffectsImport(f.ctx, []ledger.EffectRow{{
		Consumer: "billing", EventID: eventID, EffectVersion: 1, State: state,
		RequestHash: fingerprint.Payload([]byte(payload)), RequestHashAlg: fingerprint.Algorithm,
		EffectCount: effectCount, LeaseExpiresAt: leaseExpires, LeaseOwner: "billing-1",
	}})
	if err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) options(mod func(*planner.Options)) planner.Options {
	// Most fixtures start with an empty ledger: a first replay of billing.
	o := planner.Options{
		Consumer: "billing", NewConsumer: true, Stream: "DLQ", Reason: goodReason, Ticket: "INC-4521",
		OutputPath: filepath.Join(f.dir, "job.json"), Overwrite: true, Actor: "alice", Now: planNow,
	}
	if mod != nil {
		mod(&o)
	}
	return o
}

func TestPlanCountsEveryStatExactly(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	past, future := time.Now().Add(-time.Minute), time.Now().Add(time.Hour)
	f.dlq("dlq.billing", "e1", "timeout", `{"n":1}`)
	f.dlq("dlq.billing", "e2", "timeout", `{"n":2}`)
	f.dlq("dlq.billing", "e3", "http 503", `{"n":3}`)
	f.dlq("dlq.billing", "e4", "http 503", `{"n":4}`)
	f.dlq("dlq.billing", "e5", "http 503", `{"n":5}`)
	f.dlq("dlq.billing", "e6", "timeout", `{"n":6}`)
	f.dlq("dlq.billing", "e6", "timeout", `{"n":6,"changed":true}`)
	f.dlq("dlq.billing", "e7", "http 503", `{"n":7}`)
	f.dlq("dlq.billing", "e7", "http 503", `{ "n" : 7 }`)
	noIDSeq := f.dlq("dlq.billing", "", "timeout", `{"n":0}`)
	badIDSeq := f.dlq("dlq.billing", "e\x01bad", "timeout", `{"n":0}`)
	f.dlq("dlq.billing", "e8", "timeout", `{"n":8}`)
	f.dlq("dlq.billing", "e9", "bad schema", `{"n":9}`)
	unroutable := nats.NewMsg("dlq.billing")
	unroutable.Header.Set("Event-Id", "e10")
	ack, err := f.js.PublishMsg(f.ctx, unroutable)
	if err != nil {
		t.Fatal(err)
	}

	f.effect("e2", "completed", `{"n":2}`, 3, nil)
	f.effect("e3", "uncertain", `{"n":3}`, 0, nil)
	f.effect("e4", "processing", `{"n":4}`, 0, &future)
	f.effect("e5", "processing", `{"n":5}`, 0, &past)
	f.effect("e8", "completed", `{"n":8,"other":"intent"}`, 1, nil)
	f.effect("e9", "received", `{"n":9}`, 0, nil)
	f.effect("h1", "completed", `{"h":1}`, 1, nil)
	f.effect("h2", "completed", `{"h":2}`, 2, nil)

	res, err := planner.Plan(f.ctx, f.js, f.store, f.options(nil))
	if err != nil {
		t.Fatal(err)
	}
	m := res.Manifest
	want := manifest.Stats{
		Scanned: 14, MissingEventID: 1, InvalidEventID: 1, MissingOriginalSubject: 1, Candidates: 9, RepeatedInSource: 1, DuplicateInSource: 1,
		LedgerPayloadMismatch: 1, AlreadyCompleted: 1, AlreadyCompletedBy: map[string]int64{manifest.CompletedLive: 1},
		AlreadyCompletedRatio: 0.111111, ExcludedUncertain: 2, ExcludedInFlight: 1, Targets: 3,
		FailureReasons: map[string]int64{"timeout": 1, "http 503": 1, "bad schema": 1},
	}
	if !reflect.DeepEqual(m.Stats, want) {
		t.Fatalf("stats\n got %+v\nwant %+v", m.Stats, want)
	}
	// e2 completed live under version 1: a DLQ replay never repeats it (issue 14; it used to be a
	// target, charged again).
	if got, want := m.EventIDs, []string{"e1", "e7", "e9"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("targets %v, want %v", got, want)
	}
	if m.EffectVersion != (manifest.EffectVersion{From: 1, To: 2}) {
		t.Fatalf("effect version %+v, want 1 -> 2", m.EffectVersion)
	}
	// e1, e7 and e9 never completed: each is charged the mean of 3+1+1+2 over the 4 completed rows,
	// 1.75, 5.25 rounded up to 6.
	if m.ExpectedExternalCalls != 6 || m.ExternalCallsEstimate.KnownCalls != 0 || m.ExternalCallsEstimate.MeanPerEffect != 1.75 {
		t.Fatalf("expected external calls %d (%+v), want 6 = ceil(3*1.75)", m.ExpectedExternalCalls, m.ExternalCallsEstimate)
	}
	if want := []manifest.CompletedExclusion{{EventID: "e2", EffectVersion: 1}}; !reflect.DeepEqual(m.Excluded.AlreadyCompleted, want) {
		t.Errorf("excluded already completed %+v, want %+v", m.Excluded.AlreadyCompleted, want)
	}
	ids := func(xs []manifest.LedgerExclusion) []string {
		var out []string
		for _, x := range xs {
			out = append(out, x.EventID+":"+x.State)
		}
		return out
	}
	if got := ids(m.Excluded.Uncertain); !reflect.DeepEqual(got, []string{"e3:uncertain", "e5:processing"}) {
		t.Errorf("excluded uncertain %v", got)
	}
	if got := ids(m.Excluded.InFlight); !reflect.DeepEqual(got, []string{"e4:processing"}) {
		t.Errorf("excluded in flight %v", got)
	}
	if len(m.Excluded.Conflicts) != 2 || m.Excluded.Conflicts[0].EventID != "e6" || m.Excluded.Conflicts[0].Where != "source" ||
		len(m.Excluded.Conflicts[0].PayloadHashes) != 2 || m.Excluded.Conflicts[1].EventID != "e8" || m.Excluded.Conflicts[1].Where != "ledger" {
		t.Errorf("conflicts %+v", m.Excluded.Conflicts)
	}
	if want := []uint64{noIDSeq, badIDSeq, ack.Sequence}; !reflect.DeepEqual(m.Excluded.MissingEventIDSeqs, want) {
		t.Errorf("unusable message seqs %v, want %v", m.Excluded.MissingEventIDSeqs, want)
	}

	onDisk, err := manifest.Load(filepath.Join(f.dir, "job.json"))
	if err != nil {
		t.Fatalf("the written manifest does not load: %v", err)
	}
	if onDisk.Digest != m.Digest {
		t.Fatalf("digest on disk %s, returned %s", onDisk.Digest, m.Digest)
	}
	job, err := f.store.JobsGet(f.ctx, m.ID)
	if err != nil {
		t.Fatal(err)
	}
	if job.Status != "planned" || job.ManifestDigest != m.Digest || job.Targets != 3 || job.StreamLastSeq != 14 || job.SourceKind != "dlq" {
		t.Fatalf("job row %+v", job)
	}
	counts, err := f.store.JobTargetsCount(f.ctx, m.ID)
	if err != nil {
		t.Fatal(err)
	}
	if counts["pending"] != 3 || len(counts) != 1 {
		t.Fatalf("job targets by status %v, want 3 pending", counts)
	}
	audit, err := f.store.AuditList(f.ctx, m.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(audit) != 1 || audit[0].Action != "plan" || audit[0].Actor != "alice" || audit[0].ManifestDigest != m.Digest {
		t.Fatalf("audit %+v", audit)
	}
}

func TestPlanBoundary(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.dlq("dlq.billing", "old-1", "timeout", `{}`)
	f.dlq("dlq.refunds", "old-2", "timeout", `{}`)
	time.Sleep(20 * time.Millisecond)
	since := time.Now()
	time.Sleep(20 * time.Millisecond)
	f.dlq("dlq.billing", "mid-1", "http 503", `{}`)
	f.dlq("dlq.billing", "mid-2", "timeout after 20s", `{}`)
	f.dlq("dlq.refunds", "mid-3", "timeout", `{}`)
	time.Sleep(20 * time.Millisecond)
	until := time.Now()
	time.Sleep(20 * time.Millisecond)
	f.dlq("dlq.billing", "new-1", "timeout", `{}`)

	cases := []struct {
		name                 string
		mod                  func(*planner.Options)
		targets              []string
		scanned, notMatching int64
		overMax              int64
	}{
		{"subject", func(o *planner.Options) { o.SubjectFilter = "dlq.refunds" }, []string{"mid-3", "old-2"}, 2, 0, 0},
		{"since", func(o *planner.Options) { o.Since = &since }, []string{"mid-1", "mid-2", "mid-3", "new-1"}, 4, 0, 0},
		{"since and until", func(o *planner.Options) { o.Since, o.Until = &since, &until }, []string{"mid-1", "mid-2", "mid-3"}, 3, 0, 0},
		{"failure match", func(o *planner.Options) { o.FailureMatch = "^timeout$" }, []string{"mid-3", "new-1", "old-1", "old-2"}, 6, 2, 0},
		{"max keeps the oldest", func(o *planner.Options) { o.Max = 2 }, []string{"old-1", "old-2"}, 6, 0, 4},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := planner.Plan(f.ctx, f.js, f.store, f.options(func(o *planner.Options) {
				o.OutputPath = filepath.Join(f.dir, c.name+".json")
				o.JobID = "job-boundary-" + string(rune('a'+i))
				c.mod(o)
			}))
			if err != nil {
				t.Fatal(err)
			}
			// A planned job keeps its targets from the next plan's; each case plans on its own.
			cancelJob(t, f, res.Manifest.ID)
			st := res.Manifest.Stats
			if !reflect.DeepEqual(res.Manifest.EventIDs, c.targets) || st.Scanned != c.scanned ||
				st.NotMatchingFailureFilter != c.notMatching || st.OverMax != c.overMax {
				t.Fatalf("targets %v scanned %d not matching %d over max %d, want %v, %d, %d, %d", res.Manifest.EventIDs,
					st.Scanned, st.NotMatchingFailureFilter, st.OverMax, c.targets, c.scanned, c.notMatching, c.overMax)
			}
		})
	}
}

func cancelJob(t testing.TB, f *fixture, id string) {
	t.Helper()
	err := ledger.JobsTransition(f.ctx, f.db, ledger.JobTransition{ID: id, From: jobtype.Unfinished,
		To: jobtype.Cancelled, Reason: "test: plan the next case on its own", By: "alice"})
	if err != nil {
		t.Fatal(err)
	}
}

func TestPlanRefusesBadRequestsAndRecordsNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.dlq("dlq.billing", "e1", "timeout", `{}`)
	f.effect("e0", "completed", `{}`, 1, nil)
	cases := []struct {
		name string
		mod  func(*planner.Options)
		want error
	}{
		{"no reason", func(o *planner.Options) { o.Reason = "" }, planner.ErrBadOptions},
		{"trivial reason", func(o *planner.Options) { o.Reason = "replay" }, planner.ErrBadOptions},
		{"version not bumped", func(o *planner.Options) { o.EffectVersion = 1 }, planner.ErrVersionNotBumped},
		{"bad regex", func(o *planner.Options) { o.FailureMatch = "(" }, planner.ErrBadOptions},
		{"injection-shaped consumer", func(o *planner.Options) { o.Consumer = "x'; drop table effects; --" }, planner.ErrBadOptions},
		{"unknown stream", func(o *planner.Options) { o.Stream = "NOPE" }, planner.ErrStreamNotFound},
		{"output directory missing", func(o *planner.Options) { o.OutputPath = filepath.Join(f.dir, "nope", "job.json") }, planner.ErrBadOptions},
		{"header name with a space", func(o *planner.Options) { o.Headers.EventID = "Event Id" }, planner.ErrBadOptions},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := f.options(c.mod)
			_, err := planner.Plan(f.ctx, f.js, f.store, o)
			if !errors.Is(err, c.want) {
				t.Fatalf("err = %v, want %v", err, c.want)
			}
			if _, statErr := os.Stat(o.OutputPath); !os.IsNotExist(statErr) {
				t.Fatalf("a refused plan left a manifest at %s", o.OutputPath)
			}
		})
	}
	var jobs int
	if err := f.db.QueryRow(f.ctx, "select count(*) from jobs").Scan(&jobs); err != nil {
		t.Fatal(err)
	}
	if jobs != 0 {
		t.Fatalf("refused plans recorded %d jobs", jobs)
	}
}

func TestPlanRefusesAWorkQueueStream(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	if _, err := f.js.CreateStream(f.ctx, jetstream.StreamConfig{Name: "WQ", Subjects: []string{"wq.>"}, Retention: jetstream.WorkQueuePolicy}); err != nil {
		t.Fatal(err)
	}
	f.dlq("wq.billing", "e1", "timeout", `{}`)
	_, err := planner.Plan(f.ctx, f.js, f.store, f.options(func(o *planner.Options) { o.Stream = "WQ" }))
	if !errors.Is(err, planner.ErrStreamUnsupported) {
		t.Fatalf("err = %v, want ErrStreamUnsupported", err)
	}
	info, err := f.js.Stream(f.ctx, "WQ")
	if err != nil || info.CachedInfo().State.Msgs != 1 {
		t.Fatalf("the refused plan changed the work queue: %v", err)
	}
}

// TestPlanSkipsDeletedMessages: a DLQ with holes (messages deleted by hand or by limits) scans to
// its end and counts only what is there.
func TestPlanSkipsDeletedMessages(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.dlq("dlq.billing", "e1", "timeout", `{}`)
	gone := f.dlq("dlq.billing", "e2", "timeout", `{}`)
	f.dlq("dlq.billing", "e3", "timeout", `{}`)
	last := f.dlq("dlq.billing", "e4", "timeout", `{}`)
	stream, err := f.js.Stream(f.ctx, "DLQ")
	if err != nil {
		t.Fatal(err)
	}
	for _, seq := range []uint64{gone, last} {
		if err := stream.DeleteMsg(f.ctx, seq); err != nil {
			t.Fatal(err)
		}
	}
	res, err := planner.Plan(f.ctx, f.js, f.store, f.options(nil))
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Manifest.EventIDs; !reflect.DeepEqual(got, []string{"e1", "e3"}) || res.Manifest.Stats.Scanned != 2 {
		t.Fatalf("targets %v scanned %d, want [e1 e3] and 2", got, res.Manifest.Stats.Scanned)
	}
}

// TestPlanWithoutTargetsRecordsNothingAndSaysWhy: a plan that found no target used to record a
// job with 0 targets and exit 0, and its shadow passed (issue 14). Now it records nothing and
// names the exclusion that took the messages, with what to do.
func TestPlanWithoutTargetsRecordsNothingAndSaysWhy(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	if _, err := f.js.CreateStream(f.ctx, jetstream.StreamConfig{Name: "SRC", Subjects: []string{"billing.>"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.js.CreateStream(f.ctx, jetstream.StreamConfig{Name: "EMPTY", Subjects: []string{"empty.>"}}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		msg := nats.NewMsg("billing.charge.requested")
		msg.Header.Set("Event-Id", fmt.Sprintf("src-%d", i))
		msg.Data = []byte(`{}`)
		if _, err := f.js.PublishMsg(f.ctx, msg); err != nil {
			t.Fatal(err)
		}
	}
	f.dlq("dlq.billing", "done-1", "timeout", `{"n":1}`)
	f.dlq("dlq.billing", "done-2", "timeout", `{"n":2}`)
	f.effect("done-1", "completed", `{"n":1}`, 2, nil)
	f.effect("done-2", "completed", `{"n":2}`, 2, nil)
	cases := []struct{ name, stream, want string }{
		{"empty stream", "EMPTY", "stream EMPTY holds no message inside the boundary"},
		{"a source stream planned as a DLQ", "SRC", "3 of 3 messages have no Dlq-Original-Subject header: is SRC a source stream? Use --backfill"},
		{"everything already done", "DLQ", "2 of 2 events already completed (2 live): a DLQ replay never repeats what is done"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := f.options(func(o *planner.Options) { o.Stream = c.stream })
			_, err := planner.Plan(f.ctx, f.js, f.store, o)
			if !errors.Is(err, planner.ErrNoTargets) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want ErrNoTargets saying %q", err, c.want)
			}
			if _, statErr := os.Stat(o.OutputPath); !os.IsNotExist(statErr) {
				t.Fatalf("a plan without targets left a manifest at %s", o.OutputPath)
			}
		})
	}
	var jobs int
	if err := f.db.QueryRow(f.ctx, "select count(*) from jobs").Scan(&jobs); err != nil {
		t.Fatal(err)
	}
	if jobs != 0 {
		t.Fatalf("plans without targets recorded %d jobs", jobs)
	}
}

// TestPlanInterruptedLeavesNothing cancels a plan mid-scan, as Ctrl-C does: no job, no targets, no
// audit row and no manifest may be left behind.
func TestPlanInterruptedLeavesNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.largeDLQ(t, 5000, 64)
	ctx, cancel := context.WithCancel(f.ctx)
	defer cancel()
	o := f.options(func(o *planner.Options) {
		o.Progress = func(scanned, _ int64) {
			if scanned >= 1000 {
				cancel()
			}
		}
	})
	_, err := planner.Plan(ctx, f.js, f.store, o)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if _, statErr := os.Stat(o.OutputPath); !os.IsNotExist(statErr) {
		t.Fatalf("an interrupted plan left a manifest at %s", o.OutputPath)
	}
	for _, table := range []string{"jobs", "job_targets", "audit"} {
		var n int
		if err := f.db.QueryRow(f.ctx, "select count(*) from "+table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Errorf("an interrupted plan left %d rows in %s", n, table)
		}
	}
}

// TestPlanKeepsOutTheTargetsOfUnfinishedJobs: a job that has not finished may still replay its
// targets, so a second plan over the same DLQ leaves them out until it is cancelled (issue 14).
func TestPlanKeepsOutTheTargetsOfUnfinishedJobs(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for _, id := range []string{"e1", "e2", "e3"} {
		f.dlq("dlq.billing", id, "timeout", `{"id":"`+id+`"}`)
	}
	plan := func(job string, mod func(*planner.Options)) *manifest.Manifest {
		t.Helper()
		res, err := planner.Plan(f.ctx, f.js, f.store, f.options(func(o *planner.Options) {
			o.JobID, o.OutputPath = job, filepath.Join(f.dir, job+".json")
			if mod != nil {
				mod(o)
			}
		}))
		if err != nil {
			t.Fatal(err)
		}
		return res.Manifest
	}
	first := plan("job-first", func(o *planner.Options) { o.Max = 2 })
	second := plan("job-second", nil)
	wantListed := []manifest.JobExclusion{{EventID: "e1", JobID: "job-first", JobStatus: "planned"}, {EventID: "e2", JobID: "job-first", JobStatus: "planned"}}
	if !reflect.DeepEqual(second.EventIDs, []string{"e3"}) || second.Stats.ExcludedInOtherJob != 2 || !reflect.DeepEqual(second.Excluded.InOtherJob, wantListed) {
		t.Fatalf("second plan: targets %v, in another job %d %+v; want [e3] and %+v", second.EventIDs,
			second.Stats.ExcludedInOtherJob, second.Excluded.InOtherJob, wantListed)
	}
	cancelJob(t, f, first.ID)
	third := plan("job-third", nil)
	if !reflect.DeepEqual(third.EventIDs, []string{"e1", "e2"}) || third.Stats.ExcludedInOtherJob != 1 {
		t.Fatalf("after the first job was cancelled: targets %v, in another job %d; want [e1 e2] and e3 in job-second",
			third.EventIDs, third.Stats.ExcludedInOtherJob)
	}
}

// TestPlanTreatsAWriteForbiddenCompletionAsNotExecuted: a write-forbidden replay records the
// recomputed result and its suppressed calls, never an effect (issue 14). The next real plan still
// targets the event, charges it the consumer's real calls per effect, not the row's 0, and the
// drift check does not take a write-forbidden row appearing after plan for a completion.
func TestPlanTreatsAWriteForbiddenCompletionAsNotExecuted(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.dlq("dlq.billing", "e1", "timeout", `{"n":1}`)
	f.dlq("dlq.billing", "e2", "timeout", `{"n":2}`)
	f.effect("h1", "completed", `{"h":1}`, 2, nil)
	if _, err := f.store.EffectsImport(f.ctx, []ledger.EffectRow{{
		Consumer: "billing", EventID: "e1", EffectVersion: 2, State: "completed", JobID: "job-wf",
		RequestHash: fingerprint.Payload([]byte(`{"n":1}`)), RequestHashAlg: fingerprint.Algorithm, EffectCount: 0,
	}}); err != nil {
		t.Fatal(err)
	}
	ledgertest.ForbidWrites(t, f.db, "e1")

	res, err := planner.Plan(f.ctx, f.js, f.store, f.options(nil))
	if err != nil {
		t.Fatal(err)
	}
	m := res.Manifest
	if !reflect.DeepEqual(m.EventIDs, []string{"e1", "e2"}) || m.Stats.AlreadyCompleted != 0 || m.Stats.CompletedUnderOlderVersion != 0 {
		t.Fatalf("targets %v, already completed %d, completed under an older version %d; want both targets and 0, 0",
			m.EventIDs, m.Stats.AlreadyCompleted, m.Stats.CompletedUnderOlderVersion)
	}
	if m.ExpectedExternalCalls != 4 || m.ExternalCallsEstimate.KnownTargets != 0 || m.ExternalCallsEstimate.SampleSize != 1 {
		t.Fatalf("expected external calls %d (%+v), want 4: 2 targets at h1's 2 calls, the write-forbidden row's 0 left out",
			m.ExpectedExternalCalls, m.ExternalCallsEstimate)
	}

	if _, err := f.store.EffectsImport(f.ctx, []ledger.EffectRow{{
		Consumer: "billing", EventID: "e2", EffectVersion: 4, State: "completed", JobID: "job-wf-2",
		RequestHash: fingerprint.Payload([]byte(`{"n":2}`)), RequestHashAlg: fingerprint.Algorithm,
	}}); err != nil {
		t.Fatal(err)
	}
	ledgertest.ForbidWrites(t, f.db, "e2")
	drift, err := f.store.JobTargetsDrift(f.ctx, m.ID, "billing", m.EffectVersion.To, fingerprint.Algorithm, 5)
	if err != nil {
		t.Fatal(err)
	}
	if drift.Checked != 2 || drift.Drifted != 0 {
		t.Fatalf("drift %+v after a write-forbidden completion, want none", drift)
	}
	f.effect("e2", "completed", `{"n":2}`, 2, nil)
	if drift, err = f.store.JobTargetsDrift(f.ctx, m.ID, "billing", m.EffectVersion.To, fingerprint.Algorithm, 5); err != nil {
		t.Fatal(err)
	}
	if drift.Drifted != 1 || drift.ByKind[ledger.DriftCompleted] != 1 {
		t.Fatalf("drift %+v after a real completion, want e2 completed", drift)
	}
}

// Two plans of one DLQ started together: the one that classifies second waits for the first to
// commit and sees its targets, so one job holds the events and the other plan says so; without the
// wait both recorded a job for the same events and the loser stayed shadowed for ever.
func TestTwoPlansStartedTogetherDoNotBothTakeTheTargets(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for _, id := range []string{"e1", "e2", "e3"} {
		f.dlq("dlq.billing", id, "timeout", `{"id":"`+id+`"}`)
	}
	type outcome struct {
		res *planner.Result
		err error
	}
	second := make(chan outcome, 1)
	started := false
	first, err := planner.Plan(f.ctx, f.js, f.store, f.options(func(o *planner.Options) {
		o.JobID, o.OutputPath = "job-a", filepath.Join(f.dir, "a.json")
		o.Stage = func(d string) {
			// Between its classification and its commit, the first plan lets the second one run
			// as far as it can.
			if !strings.HasPrefix(d, "recording job") || started {
				return
			}
			started = true
			go func() {
				res, err := planner.Plan(f.ctx, f.js, f.store, f.options(func(o *planner.Options) {
					o.JobID, o.OutputPath = "job-b", filepath.Join(f.dir, "b.json")
				}))
				second <- outcome{res, err}
			}()
			select {
			case o := <-second:
				second <- o
			case <-time.After(time.Second):
			}
		}
	}))
	if err != nil || len(first.Manifest.EventIDs) != 3 {
		t.Fatalf("first plan: %v", err)
	}
	b := <-second
	if b.err == nil {
		t.Fatalf("the second plan also recorded a job for %v", b.res.Manifest.EventIDs)
	}
	if !errors.Is(b.err, planner.ErrNoTargets) || !strings.Contains(b.err.Error(), "job-a") {
		t.Fatalf("second plan: %v; want no targets, naming job-a", b.err)
	}
}
