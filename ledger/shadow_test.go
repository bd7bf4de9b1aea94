package ledger_test

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/replayctl/replayctl/internal/testenv/pgtest"
	"github.com/replayctl/replayctl/ledger"
)

// shadowJob records job id with n targets: event IDs s000.., stream sequences 10, 20, ..., failure
// reasons cycling over reasons.
func shadowJob(t *testing.T, store *ledger.Store, id string, n int, reasons ...string) []ledger.JobTarget {
	t.Helper()
	if err := ledger.JobsInsert(t.Context(), store.Pool(), sampleJob(id)); err != nil {
		t.Fatal(err)
	}
	targets := make([]ledger.JobTarget, n)
	for i := range targets {
		targets[i] = ledger.JobTarget{JobID: id, EventID: fmt.Sprintf("s%03d", i), StreamSeq: int64(10 * (i + 1)),
			OriginalSubject: "billing.charge", FailureReason: reasons[i%len(reasons)]}
	}
	if _, err := ledger.JobTargetsInsert(t.Context(), store.Pool(), targets); err != nil {
		t.Fatal(err)
	}
	return targets
}

func TestJobTargetsSampleTakesTheSmallestHashesPerReason(t *testing.T) {
	t.Parallel()
	store := pgtest.Ledger(t)
	targets := shadowJob(t, store, "job-s", 30, "timeout", "http 503", "bad schema")
	shadowJob(t, store, "job-other", 30, "timeout")
	const seed = "0123456789abcdef"
	quotas := map[string]int{"timeout": 3, "http 503": 2, "bad schema": 50}

	identity := map[string]string{"timeout": "timeout", "http 503": "http 503", "bad schema": "bad schema"}
	got, err := store.JobTargetsSample(t.Context(), "job-s", seed, quotas, identity)
	if err != nil {
		t.Fatal(err)
	}
	// The same rule in Go: per reason, order by sha256(seed || event_id), keep the quota.
	byReason := map[string][]ledger.JobTarget{}
	for _, tg := range targets {
		byReason[tg.FailureReason] = append(byReason[tg.FailureReason], tg)
	}
	var want []string
	for reason, ts := range byReason {
		sort.Slice(ts, func(i, j int) bool {
			a, b := sha256.Sum256([]byte(seed+ts[i].EventID)), sha256.Sum256([]byte(seed+ts[j].EventID))
			return string(a[:]) < string(b[:])
		})
		for _, tg := range ts[:min(quotas[reason], len(ts))] {
			want = append(want, reason+"/"+tg.EventID)
		}
	}
	sort.Strings(want)
	var ids []string
	for _, s := range got {
		ids = append(ids, s.FailureReason+"/"+s.EventID)
		if s.StreamSeq == 0 || s.PayloadHash != "" {
			t.Fatalf("sampled target %+v: want its stream sequence and no payload hash (none was planned)", s)
		}
	}
	if !slices.Equal(ids, want) {
		t.Fatalf("sample\n got %v\nwant %v", ids, want)
	}
	if len(ids) != 3+2+10 {
		t.Fatalf("%d sampled, want the quotas capped at each reason's 10 targets", len(ids))
	}
	other, err := store.JobTargetsSample(t.Context(), "job-s", "fedcba9876543210", quotas, identity)
	if err != nil {
		t.Fatal(err)
	}
	if len(other) != len(got) || slices.EqualFunc(other, got, func(a, b ledger.ShadowTarget) bool { return a.EventID == b.EventID }) {
		t.Fatalf("another seed chose the same sample: the seed does not order it")
	}
}

func TestJobTargetsPageBySeqWalksTheJobInStreamOrder(t *testing.T) {
	t.Parallel()
	store := pgtest.Ledger(t)
	shadowJob(t, store, "job-p", 25, "timeout")
	shadowJob(t, store, "job-q", 5, "timeout")
	var seqs []uint64
	var after uint64
	for pages := 0; ; pages++ {
		page, err := store.JobTargetsPageBySeq(t.Context(), "job-p", after, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			if pages != 3 {
				t.Fatalf("%d pages of 10 for 25 targets", pages)
			}
			break
		}
		for _, tg := range page {
			seqs = append(seqs, tg.StreamSeq)
		}
		after = page[len(page)-1].StreamSeq
	}
	for i, seq := range seqs {
		if seq != uint64(10*(i+1)) || len(seqs) != 25 {
			t.Fatalf("sequences %v, want 10, 20, ..., 250 once each, in order", seqs)
		}
	}
}

func TestEffectsOriginalsPicksTheLatestComparableResult(t *testing.T) {
	t.Parallel()
	store := pgtest.Ledger(t)
	ctx := t.Context()
	row := func(consumer, eventID string, version int, state, hash, body string, count int) ledger.EffectRow {
		e := ledger.EffectRow{Consumer: consumer, EventID: eventID, EffectVersion: version, State: state,
			RequestHash: "sha256:req", RequestHashAlg: "canonical-json-v1", ResultHash: hash, EffectCount: count}
		if body != "" {
			e.ResultBody = json.RawMessage(body)
		}
		return e
	}
	if _, err := store.EffectsImport(ctx, []ledger.EffectRow{
		row("billing", "a", 1, "completed", "sha256:a1", `{"v": 1}`, 1),
		row("billing", "a", 2, "reconciled", "sha256:a2", `{"v": 2}`, 2),
		row("billing", "a", 3, "completed", "sha256:a3", `{"v": 3}`, 3), // the target version: not an original
		row("billing", "b", 1, "completed", "sha256:b1", `{"v": 1}`, 1),
		row("billing", "b", 2, "uncertain", "", "", 0),                  // not completed
		row("billing", "c", 1, "completed", "sha256:c1", `{"v": 1}`, 4), // body past replay_until
		row("billing", "d", 1, "completed", "sha256:d1", `{"v": 1}`, 1),
		row("billing", "d", 2, "completed", "", "", 1), // nothing to compare: the older row serves
		row("refunds", "e", 1, "completed", "sha256:e1", `{}`, 1),
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Pool().Exec(ctx, `update effects set replay_until = now() - interval '1 second' where event_id = 'c'`); err != nil {
		t.Fatal(err)
	}
	got, err := store.EffectsOriginals(ctx, "billing", []string{"a", "b", "c", "d", "e", "nope"}, 3)
	if err != nil {
		t.Fatal(err)
	}
	summary := map[string]string{}
	for id, o := range got {
		summary[id] = fmt.Sprintf("v%d %s %s %d", o.EffectVersion, o.ResultHash, o.ResultBody, o.EffectCount)
	}
	want := map[string]string{
		"a": `v2 sha256:a2 {"v": 2} 2`,
		"b": `v1 sha256:b1 {"v": 1} 1`,
		"c": `v1 sha256:c1  4`,
		"d": `v1 sha256:d1 {"v": 1} 1`,
	}
	if fmt.Sprint(summary) != fmt.Sprint(want) {
		t.Fatalf("originals\n got %v\nwant %v", summary, want)
	}
}

func TestJobTargetsRecordShadowStoresOutcomesInOneStatement(t *testing.T) {
	t.Parallel()
	store := pgtest.Ledger(t)
	ctx := t.Context()
	shadowJob(t, store, "job-r", 3, "timeout")
	at := time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC)
	outcomes := []ledger.ShadowOutcome{
		{EventID: "s000", Status: "ok", Comparison: "changed", ComparedOn: "body", ResultHash: "sha256:r", EffectCount: 2, ShadowedAt: at},
		{EventID: "s001", Status: "error", ResultHash: "", EffectCount: 1, Error: "provider down", ShadowedAt: at},
		{EventID: "s002", Status: "timeout", EffectCount: 5, Error: "no reply within 5s", ShadowedAt: at},
	}
	if err := store.JobTargetsRecordShadow(ctx, "job-r", outcomes); err != nil {
		t.Fatal(err)
	}
	rows, err := store.Pool().Query(ctx, `
		select event_id || ' ' || status || ' ' || shadow_status || ' ' || coalesce(shadow_comparison, '-') || ' ' ||
		       coalesce(shadow_compared_on, '-') || ' ' || coalesce(shadow_result_hash, '-') || ' ' ||
		       coalesce(shadow_effect_count::text, '-') || ' ' || coalesce(shadow_error, '-') || ' ' || (shadowed_at = $2)::text
		  from job_targets where job_id = $1 order by event_id`, "job-r", at)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		got = append(got, s)
	}
	want := []string{
		"s000 shadowed ok changed body sha256:r 2 - true",
		"s001 pending error - - - 1 provider down true",
		"s002 pending timeout - - - - no reply within 5s true", // no reply: no effect count
	}
	if !slices.Equal(got, want) {
		t.Fatalf("stored\n got %q\nwant %q", got, want)
	}

	if err := ledger.JobTargetsClearShadow(ctx, store.Pool(), "job-r"); err != nil {
		t.Fatal(err)
	}
	if n := queryInt(t, store, `select count(*) from job_targets where job_id = 'job-r' and (shadow_status is not null or status <> 'pending')`); n != 0 {
		t.Fatalf("%d targets keep a shadow outcome after clearing", n)
	}

	// A target that moved on to execute is not overwritten, and the write says so.
	if _, err := store.Pool().Exec(ctx, `update job_targets set status = 'published' where event_id = 's001'`); err != nil {
		t.Fatal(err)
	}
	err = store.JobTargetsRecordShadow(ctx, "job-r", outcomes)
	if !errors.Is(err, ledger.ErrJobStatus) || !strings.Contains(err.Error(), "stored 2 of 3") {
		t.Fatalf("err = %v, want ErrJobStatus counting the stored outcomes", err)
	}
	if n := queryInt(t, store, `select count(*) from job_targets where event_id = 's001' and shadow_status is null and status = 'published'`); n != 1 {
		t.Fatal("a published target was overwritten by a shadow outcome")
	}
}

func TestShadowVerdictsLatest(t *testing.T) {
	t.Parallel()
	store := pgtest.Ledger(t)
	ctx := t.Context()
	if err := ledger.JobsInsert(ctx, store.Pool(), sampleJob("job-v")); err != nil {
		t.Fatal(err)
	}
	if _, err := store.ShadowVerdictsLatest(ctx, "job-v"); !errors.Is(err, ledger.ErrNoVerdict) {
		t.Fatalf("err = %v, want ErrNoVerdict before any shadow", err)
	}
	first := ledger.ShadowVerdict{JobID: "job-v", ManifestDigest: "sha256:abc", Pass: false, Seed: "0123456789abcdef",
		Thresholds: json.RawMessage(`{"maxErrorRatio":0}`), Totals: json.RawMessage(`{"targets":3}`),
		Reasons: []string{"1 of 3 targets failed"}, Actor: "bob"}
	second := first
	second.Pass, second.Reasons, second.ReportPath = true, nil, "/tmp/job.shadow.json"
	for _, v := range []ledger.ShadowVerdict{first, second} {
		if err := ledger.ShadowVerdictsInsert(ctx, store.Pool(), v); err != nil {
			t.Fatal(err)
		}
	}
	got, err := store.ShadowVerdictsLatest(ctx, "job-v")
	if err != nil {
		t.Fatal(err)
	}
	if !got.Pass || got.ReportPath != second.ReportPath || got.ManifestDigest != "sha256:abc" || got.Seed != second.Seed ||
		len(got.Reasons) != 0 || got.Actor != "bob" || got.CreatedAt.IsZero() {
		t.Fatalf("latest verdict %+v, want the second", got)
	}
	var totals map[string]int
	if err := json.Unmarshal(got.Totals, &totals); err != nil || totals["targets"] != 3 {
		t.Fatalf("totals %s (%v)", got.Totals, err)
	}
	if err := ledger.ShadowVerdictsInsert(ctx, store.Pool(), ledger.ShadowVerdict{JobID: "job-unknown", ManifestDigest: "x", Seed: "x",
		Thresholds: json.RawMessage(`{}`), Totals: json.RawMessage(`{}`), Actor: "bob"}); err == nil {
		t.Fatal("a verdict for a job that does not exist was recorded")
	}
}

func TestShadowLockAdmitsOneRunPerJob(t *testing.T) {
	t.Parallel()
	store := pgtest.Ledger(t)
	ctx := t.Context()
	release, err := store.ShadowLock(ctx, "job-l")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.ShadowLock(ctx, "job-l"); !errors.Is(err, ledger.ErrShadowRunning) {
		t.Fatalf("err = %v, want ErrShadowRunning while the lock is held", err)
	}
	other, err := store.ShadowLock(ctx, "job-m")
	if err != nil {
		t.Fatalf("another job's lock: %v", err)
	}
	other()
	release()
	again, err := store.ShadowLock(ctx, "job-l")
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	again()
}

// Advisory locks are database-wide; a job ID held in one schema (the demo's, a test run's) must not
// refuse the same job ID in another ledger of the same database.
func TestSessionLocksAreScopedToTheLedgerSchema(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	one, two := pgtest.Ledger(t), pgtest.Ledger(t)
	release, err := one.ShadowLock(ctx, "job-shared-id")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	other, err := two.ShadowLock(ctx, "job-shared-id")
	if err != nil {
		t.Fatalf("the same job ID in another schema was refused: %v", err)
	}
	other()
	if _, err := one.ShadowLock(ctx, "job-shared-id"); !errors.Is(err, ledger.ErrShadowRunning) {
		t.Fatalf("err = %v, want ErrShadowRunning in the schema that holds it", err)
	}
}
