package shadow_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/replayctl/replayctl/jobtype"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/manifest"
	"github.com/replayctl/replayctl/shadow"
)

func TestShadowCountsStoresAndRecordsTheVerdict(t *testing.T) {
	t.Parallel()
	f, m := standardJob(t)
	f.serve(behaviour{})
	var progress []int64
	var stages []string
	r := f.mustRun(f.options(m, func(o *shadow.Options) {
		o.Progress = func(done, total int64) {
			if total != 9 {
				t.Errorf("progress total %d, want 9", total)
			}
			progress = append(progress, done)
		}
		o.Stage = func(s string) { stages = append(stages, s) }
	}))

	want := shadow.Totals{
		Targets: 9, Answered: 9, Identical: 3, Changed: 3, NoOriginal: 3, ComparedOnHash: 2,
		ShadowExternalCalls: 9, MaxCallsPerTarget: 1, ExpectedExternalCalls: 9, EffectKinds: map[string]int64{"payments.charge": 9},
	}
	if !reflect.DeepEqual(r.Totals, want) {
		t.Fatalf("totals\n got %+v\nwant %+v", r.Totals, want)
	}
	if !r.Verdict.Pass || len(r.Verdict.Reasons) != 0 {
		t.Fatalf("verdict %+v, want a pass: changes alone do not fail by default", r.Verdict)
	}
	if !slices.Equal(progress, []int64{1, 2, 3, 4, 5, 6, 7, 8, 9}) {
		t.Errorf("progress %v, want one call per target up to 9", progress)
	}
	if len(stages) < 4 || !strings.Contains(strings.Join(stages, "\n"), "seed "+r.Seed) {
		t.Errorf("stages %q: want one line per step, naming the seed", stages)
	}

	got := f.stored(m.ID)
	one := 1
	wantStored := map[string]stored{
		"e01": {"shadowed", "ok", "identical", "body", "", &one},
		"e02": {"shadowed", "ok", "changed", "body", "", &one},
		"e03": {"shadowed", "ok", "identical", "body", "", &one},
		"e04": {"shadowed", "ok", "changed", "body", "", &one},
		"e05": {"shadowed", "ok", "identical", "hash", "", &one},
		"e06": {"shadowed", "ok", "changed", "hash", "", &one},
		"e07": {"shadowed", "ok", "no_original", "", "", &one},
		"e08": {"shadowed", "ok", "no_original", "", "", &one},
		"e09": {"shadowed", "ok", "no_original", "", "", &one},
	}
	if !reflect.DeepEqual(got, wantStored) {
		t.Fatalf("stored outcomes\n got %+v\nwant %+v", got, wantStored)
	}
	var unhashed int
	if err := f.db.QueryRow(f.ctx, `select count(*) from job_targets where job_id = $1
		and (shadow_result_hash not like 'sha256:%' or shadowed_at is null)`, m.ID).Scan(&unhashed); err != nil || unhashed != 0 {
		t.Fatalf("%d targets lack a result hash or a time (%v)", unhashed, err)
	}

	if s := f.jobStatus(m.ID); s != "shadowed" {
		t.Fatalf("job status %s, want shadowed", s)
	}
	v, err := f.store.ShadowVerdictsLatest(f.ctx, m.ID)
	if err != nil {
		t.Fatal(err)
	}
	var totals shadow.Totals
	if err := json.Unmarshal(v.Totals, &totals); err != nil || !reflect.DeepEqual(totals, want) {
		t.Fatalf("verdict totals %s (%v), want %+v", v.Totals, err, want)
	}
	if !v.Pass || v.ManifestDigest != m.Digest || v.Seed != r.Seed || v.Actor != "bob" || v.ReportPath != f.dir+"/job.shadow.json" {
		t.Fatalf("verdict row %+v", v)
	}
	audit, err := f.store.AuditList(f.ctx, m.ID)
	if err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, a := range audit {
		actions = append(actions, a.Action)
		if a.Action != "plan" && (a.Actor != "bob" || a.ManifestDigest != m.Digest) {
			t.Errorf("audit entry %+v: want actor bob and the digest", a)
		}
	}
	if !slices.Equal(actions, []string{"plan", "shadow.started", "shadow.verdict"}) {
		t.Fatalf("audit actions %v", actions)
	}
}

func TestShadowDiffSeparatesChangesNoiseAndIgnoredFields(t *testing.T) {
	t.Parallel()
	f, m := standardJob(t)
	f.serve(behaviour{})
	r := f.mustRun(f.options(m, func(o *shadow.Options) { o.Sample = 100 }))

	if r.Sample.Size != 9 || len(r.Sample.Items) != 9 {
		t.Fatalf("sample of %d items (size %d), want all 9 targets: the sample is capped at the targets", len(r.Sample.Items), r.Sample.Size)
	}
	items := map[string]shadow.SampleItem{}
	for _, it := range r.Sample.Items {
		items[it.EventID] = it
	}
	changed := func(id string) []string {
		var paths []string
		for _, c := range items[id].Changed {
			paths = append(paths, c.Path)
		}
		return paths
	}
	e02 := items["e02"]
	if e02.Outcome != "changed" || e02.Baseline != "ledger" || e02.BaselineVersion != 1 || len(e02.Changed) != 1 ||
		e02.Changed[0].Path != "feeCents" || string(e02.Changed[0].Original) != "70" || string(e02.Changed[0].Shadow) != "75" {
		t.Fatalf("e02 %+v: want feeCents changed from 70 to 75 against the ledger body", e02)
	}
	if !slices.Equal(e02.Noise, []string{"processedAt"}) || !slices.Equal(e02.Ignored, []string{"lines[*].sku"}) {
		t.Fatalf("e02 noise %v ignored %v: want processedAt as noise and the SKU as ignored", e02.Noise, e02.Ignored)
	}
	if e01 := items["e01"]; e01.Outcome != "identical" || e01.OriginalEffects != 1 || e01.ShadowEffects != 1 {
		t.Fatalf("e01 %+v: want identical once noise and ignored fields are left out", e01)
	}
	if e05 := items["e05"]; e05.Outcome != "identical" || e05.Baseline != shadow.BaselineLedgerHash {
		t.Fatalf("e05 %+v: want identical on the hash of a pruned body", e05)
	}
	if e06 := items["e06"]; e06.Outcome != "changed" || e06.Baseline != shadow.BaselineLedgerHash || len(e06.Changed) != 0 {
		t.Fatalf("e06 %+v: want changed on hash (body past replay_until), with no field paths", e06)
	}
	if e08 := items["e08"]; e08.Baseline != shadow.BaselineShadowFrom || e08.BaselineVersion != 1 || !slices.Equal(changed("e08"), []string{"feeCents"}) {
		t.Fatalf("e08 %+v: want a shadow run under version 1 as baseline, feeCents changed", e08)
	}
	if e09 := items["e09"]; e09.Baseline != shadow.BaselineShadowFrom || e09.Outcome != "identical" {
		t.Fatalf("e09 %+v: want identical to the version 1 shadow run", e09)
	}

	fields := map[string]shadow.FieldSummary{}
	var paths []string
	for _, fs := range r.Fields {
		fields[fs.Path] = fs
		paths = append(paths, fs.Path)
	}
	if !slices.IsSorted(paths) {
		t.Errorf("field summaries not sorted by path: %v", paths)
	}
	// feeCents changed for e02, e04 (ledger bodies) and e08 (shadow-from); e06 compares on hash.
	if fields["feeCents"] != (shadow.FieldSummary{Path: "feeCents", Changed: 3}) {
		t.Errorf("feeCents %+v, want changed in 3 sampled events", fields["feeCents"])
	}
	// SKUs exist in e01, e02 and e07 (shadow-from); e06's differ too but it compares on hash.
	if fields["lines[*].sku"] != (shadow.FieldSummary{Path: "lines[*].sku", Ignored: 3}) {
		t.Errorf("lines[*].sku %+v, want ignored in 3 sampled events", fields["lines[*].sku"])
	}
	if fs := fields["processedAt"]; fs.Noise == 0 || fs.Changed != 0 {
		t.Errorf("processedAt %+v, want noise only", fs)
	}

	path := f.dir + "/report.json"
	if err := shadow.WriteReport(path, r); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(path)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("report file mode %v (%v), want 0600: it holds result values", info.Mode(), err)
	}
	data, _ := os.ReadFile(path)
	var back shadow.Report
	if err := json.Unmarshal(data, &back); err != nil || back.Seed != r.Seed || len(back.Sample.Items) != 9 {
		t.Fatalf("report file does not round-trip: %v", err)
	}
	for _, key := range []string{`"manifestDigest"`, `"comparedOnHash"`, `"baselineVersion"`, `"feeCents"`} {
		if !strings.Contains(string(data), key) {
			t.Errorf("report file lacks %s", key)
		}
	}
}

func TestShadowSampleIsStableAndCoversEveryReason(t *testing.T) {
	t.Parallel()
	f, m := standardJob(t)
	f.serve(behaviour{})
	sampleOf := func(r *shadow.Report) []string {
		var ids []string
		for _, it := range r.Sample.Items {
			ids = append(ids, it.FailureReason+"/"+it.EventID)
		}
		return ids
	}
	first := f.mustRun(f.options(m, func(o *shadow.Options) { o.Sample = 3 }))
	second := f.mustRun(f.options(m, func(o *shadow.Options) { o.Sample = 3 }))

	if first.Seed != m.Digest[len("sha256:"):len("sha256:")+16] || first.Sample.Seed != first.Seed {
		t.Fatalf("seed %q (sample %q), want the first 16 hex digits of %s", first.Seed, first.Sample.Seed, m.Digest)
	}
	if !slices.Equal(sampleOf(first), sampleOf(second)) {
		t.Fatalf("two runs sampled %v and %v", sampleOf(first), sampleOf(second))
	}
	want := map[string]int{"timeout": 1, "http <n>": 1, "bad schema": 1}
	if !maps.Equal(first.Sample.PerReason, want) {
		t.Fatalf("per reason %v, want one of each of the three reasons", first.Sample.PerReason)
	}
	if got := sampleOf(first); !slices.IsSorted(got) {
		t.Fatalf("sample items %v not sorted by reason and event ID", got)
	}

	// Each run replaces the outcomes and records its own verdict.
	var verdicts int
	if err := f.db.QueryRow(f.ctx, `select count(*) from shadow_verdicts where job_id = $1`, m.ID).Scan(&verdicts); err != nil || verdicts != 2 {
		t.Fatalf("%d verdicts (%v), want one per run", verdicts, err)
	}
	if n := len(f.stored(m.ID)); n != 9 {
		t.Fatalf("%d stored outcomes, want 9", n)
	}
}

func TestShadowStopsWhenTheResponderHangs(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for i := range 500 {
		f.dlq(eventID(i), []string{"timeout", "http 503"}[i%2], charge{AmountCents: 100 + i})
	}
	m := f.plan()
	// The sample (5 events, each asked twice; no version before 1 to ask for a baseline) is
	// answered, then the responder hangs.
	resp := f.serve(behaviour{reply: func(n int64) bool { return n <= 10 }})
	const timeout = 100 * time.Millisecond
	start := time.Now()
	r := f.mustRun(f.options(m, func(o *shadow.Options) {
		o.Sample, o.Concurrency, o.Timeout = 5, 20, timeout
	}))
	elapsed := time.Since(start)

	tot := r.Totals
	if !tot.Aborted || !strings.Contains(tot.AbortReason, "in a row went unanswered") {
		t.Fatalf("totals %+v: want the pass aborted after a run of unanswered requests", tot)
	}
	// The limit is max(200, 10 x 20); at most the requests in flight finish after it.
	if tot.Timeouts <= 200 || tot.Timeouts > 200+20 || tot.Answered != 5 {
		t.Fatalf("timeouts %d answered %d: want just over 200 timeouts and the 5 sampled answers", tot.Timeouts, tot.Answered)
	}
	for _, it := range r.Sample.Items {
		if it.Baseline != "none" || it.Outcome != "no_original" {
			t.Fatalf("sample item %+v: with no version before 1 there is no baseline to compare with", it)
		}
	}
	if naive := time.Duration(m.Stats.Targets) * timeout; elapsed > naive/10 {
		t.Fatalf("shadow took %s, want well under targets x timeout = %s", elapsed, naive)
	}
	if n := resp.requests.Load(); n >= 400 {
		t.Fatalf("the responder got %d requests: the pass did not stop", n)
	}
	if r.Verdict.Pass || !hasReason(r.Verdict, "--max-unanswered-ratio") || !hasReason(r.Verdict, "in a row") {
		t.Fatalf("verdict %+v: want a fail naming the unanswered ratio and the abort", r.Verdict)
	}
	var timeouts int64
	if err := f.db.QueryRow(f.ctx, `select count(*) from job_targets where job_id = $1 and shadow_status = 'timeout'`, m.ID).Scan(&timeouts); err != nil || timeouts != tot.Timeouts {
		t.Fatalf("%d stored timeouts (%v), want %d", timeouts, err, tot.Timeouts)
	}
}

func TestShadowWithASilentOrMissingResponderSkipsTheFullPass(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		serve  bool
		status string
	}{{"silent responder", true, "timeout"}, {"no responder", false, "no_responder"}} {
		t.Run(c.name, func(t *testing.T) {
			f, m := standardJob(t)
			if c.serve {
				f.serve(behaviour{reply: func(int64) bool { return false }})
			} else {
				// A run that shadowed every target comes first: the failed run must not leave
				// its outcomes behind as if they were its own.
				first := f.serve(behaviour{})
				f.mustRun(f.options(m, nil))
				if err := first.sub.Unsubscribe(); err != nil {
					t.Fatal(err)
				}
			}
			start := time.Now()
			r := f.mustRun(f.options(m, func(o *shadow.Options) { o.Timeout = 150 * time.Millisecond }))
			if elapsed := time.Since(start); elapsed > 2*time.Second {
				t.Fatalf("took %s, want one timeout per sampled event at most", elapsed)
			}
			tot := r.Totals
			unanswered := tot.Timeouts + tot.NoResponder
			if !tot.Aborted || !strings.Contains(tot.AbortReason, "consumer.ServeShadow") || unanswered != 4 || tot.Answered != 0 {
				t.Fatalf("totals %+v: want the 4 sampled targets unanswered and the pass aborted", tot)
			}
			if (c.status == "timeout") != (tot.Timeouts == 4) {
				t.Fatalf("totals %+v: want every unanswered request counted as %s", tot, c.status)
			}
			if r.Verdict.Pass || !hasReason(r.Verdict, "no shadow responder answered on replay.shadow.billing") {
				t.Fatalf("verdict %+v", r.Verdict)
			}
			var withOutcome, asExpected int
			if err := f.db.QueryRow(f.ctx, `select count(*), count(*) filter (where shadow_status = $2 and status = 'pending')
				from job_targets where job_id = $1 and shadow_status is not null`, m.ID, c.status).Scan(&withOutcome, &asExpected); err != nil ||
				withOutcome != 4 || asExpected != 4 {
				t.Fatalf("%d stored outcomes, %d pending as %s (%v): want the 4 sampled only", withOutcome, asExpected, c.status, err)
			}
			if s := f.jobStatus(m.ID); s != "shadowed" {
				t.Fatalf("job status %s, want shadowed with a failing verdict", s)
			}
		})
	}
}

func TestShadowVerdictFailsOnCallsAndErrors(t *testing.T) {
	t.Parallel()
	t.Run("calls above the plan", func(t *testing.T) {
		f, m := standardJob(t)
		f.serve(behaviour{effects: 2})
		r := f.mustRun(f.options(m, nil))
		if r.Totals.ShadowExternalCalls != 18 || r.Totals.ExpectedExternalCalls != 9 {
			t.Fatalf("calls %d expected %d, want 18 and 9", r.Totals.ShadowExternalCalls, r.Totals.ExpectedExternalCalls)
		}
		// Each of the six targets with an original recorded one call: two is a changed behaviour,
		// even where the result is the same.
		if r.Totals.EffectCountChanged != 6 || r.Totals.Changed != 6 || r.Totals.Identical != 0 {
			t.Fatalf("totals %+v, want the 6 targets with an original changed by their call count", r.Totals)
		}
		withLedgerBaseline := 0
		for _, it := range r.Sample.Items {
			if it.Baseline == shadow.BaselineLedger {
				withLedgerBaseline++
			}
			if it.Baseline == shadow.BaselineLedger && (!it.EffectsChanged || it.Outcome != shadow.OutcomeChanged || it.OriginalEffects != 1 || it.ShadowEffects != 2) {
				t.Errorf("sample item %+v: want a changed call count, 1 -> 2", it)
			}
		}
		if withLedgerBaseline == 0 {
			t.Fatal("no sampled event has a ledger original to compare call counts with")
		}
		want := "shadow would make 18 external calls, 100.0% above the plan's expected 9 (--max-calls-over 0.1)"
		if r.Verdict.Pass || !slices.Equal(r.Verdict.Reasons, []string{want}) {
			t.Fatalf("verdict %+v, want the one reason %q", r.Verdict, want)
		}
		// The same calls pass with room for them.
		r = f.mustRun(f.options(m, func(o *shadow.Options) { o.Thresholds.MaxCallsOverExpected = 1 }))
		if !r.Verdict.Pass {
			t.Fatalf("verdict %+v with --max-calls-over 1, want a pass", r.Verdict)
		}
	})
	t.Run("shadow errors", func(t *testing.T) {
		f := newFixture(t)
		f.seedStandard()
		f.dlq("e10", "timeout", charge{AmountCents: 500, Fail: true})
		m := f.plan()
		f.serve(behaviour{})
		r := f.mustRun(f.options(m, nil))
		if r.Totals.ShadowErrors != 1 || r.Totals.Answered != 10 {
			t.Fatalf("totals %+v, want 1 shadow error among 10 answers", r.Totals)
		}
		want := "1 of 10 targets (10.00%) failed in shadow (1 shadow errors, 0 missing from the DLQ), above --max-error-ratio 0"
		if r.Verdict.Pass || !slices.Equal(r.Verdict.Reasons, []string{want}) {
			t.Fatalf("verdict %+v, want the one reason %q", r.Verdict, want)
		}
		if s := f.stored(m.ID)["e10"]; s.ShadowStatus != "error" || s.Status != "pending" || !strings.Contains(s.Error, "connection refused") {
			t.Fatalf("e10 stored %+v, want a pending target with the responder's error", s)
		}
		r = f.mustRun(f.options(m, func(o *shadow.Options) { o.Thresholds.MaxErrorRatio = 0.1 }))
		if !r.Verdict.Pass {
			t.Fatalf("verdict %+v with --max-error-ratio 0.1, want a pass", r.Verdict)
		}
	})
}

func TestShadowRefusesAManifestThatIsNotItsJob(t *testing.T) {
	t.Parallel()
	f, m := standardJob(t)
	f.serve(behaviour{})

	missing := *m
	missing.ID = "job-never-planned"
	otherDigest := *m
	otherDigest.Digest = "sha256:" + strings.Repeat("0", 64)
	for name, mm := range map[string]*manifest.Manifest{"missing job": &missing, "other digest": &otherDigest} {
		t.Run(name, func(t *testing.T) {
			_, err := f.run(f.options(mm, nil))
			if !errors.Is(err, shadow.ErrJobMismatch) {
				t.Fatalf("err = %v, want ErrJobMismatch", err)
			}
		})
	}
	t.Run("job already executing", func(t *testing.T) {
		if err := ledger.JobsTransition(f.ctx, f.db, ledger.JobTransition{ID: m.ID, From: []jobtype.Status{"planned"}, To: "executing"}); err != nil {
			t.Fatal(err)
		}
		_, err := f.run(f.options(m, nil))
		if !errors.Is(err, shadow.ErrJobMismatch) || !strings.Contains(err.Error(), "executing") {
			t.Fatalf("err = %v, want ErrJobMismatch naming the status", err)
		}
	})
	if _, err := f.store.ShadowVerdictsLatest(f.ctx, m.ID); !errors.Is(err, ledger.ErrNoVerdict) {
		t.Fatalf("a refused shadow recorded a verdict: %v", err)
	}
	if s := f.stored(m.ID)["e01"]; s.ShadowStatus != "" {
		t.Fatalf("a refused shadow stored outcomes: %+v", s)
	}
}

func TestShadowCountsDeletedDLQMessagesAsSourceMissing(t *testing.T) {
	t.Parallel()
	f, m := standardJob(t)
	f.serve(behaviour{})
	stream, err := f.env.JS.Stream(f.ctx, "DLQ")
	if err != nil {
		t.Fatal(err)
	}
	// e06 sits between targets, e09 is the stream's last message.
	for _, id := range []string{"e06", "e09"} {
		if err := stream.DeleteMsg(f.ctx, f.seqs[id]); err != nil {
			t.Fatal(err)
		}
	}
	// With Sample 1 the deleted targets are met by the full pass's stream read (one "timeout"
	// target is sampled); with Sample 100 by the sample's message gets.
	for _, sample := range []int{1, 100} {
		r := f.mustRun(f.options(m, func(o *shadow.Options) { o.Sample = sample }))
		for _, it := range r.Sample.Items {
			if (it.EventID == "e06" || it.EventID == "e09") != (it.Outcome == "source_missing") {
				t.Fatalf("sample %d: item %+v", sample, it)
			}
		}
		if r.Totals.SourceMissing != 2 || r.Totals.Answered != 7 {
			t.Fatalf("sample %d: totals %+v, want 2 missing from the DLQ and 7 answered", sample, r.Totals)
		}
		stored := f.stored(m.ID)
		for _, id := range []string{"e06", "e09"} {
			if s := stored[id]; s.ShadowStatus != "source_missing" || !strings.Contains(s.Error, "deleted") || s.EffectCount != nil {
				t.Fatalf("sample %d: %s stored %+v, want source_missing saying the message was deleted", sample, id, s)
			}
		}
		if r.Verdict.Pass || !hasReason(r.Verdict, "2 missing from the DLQ") {
			t.Fatalf("sample %d: verdict %+v", sample, r.Verdict)
		}
	}
}

func TestShadowCancelledStopsPromptlyAndKeepsOutcomes(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for i := range 300 {
		f.dlq(eventID(i), "timeout", charge{AmountCents: 100 + i})
	}
	m := f.plan()
	ctx, cancel := context.WithCancel(f.ctx)
	defer cancel()
	const cancelAt = 50
	f.serve(behaviour{reply: func(n int64) bool {
		if n == cancelAt {
			cancel()
		}
		return n < cancelAt
	}})
	start := time.Now()
	_, err := shadow.Run(ctx, f.env.Conn, f.env.JS, f.store, f.options(m, func(o *shadow.Options) { o.Sample = 5 }))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if elapsed := time.Since(start); elapsed > time.Second {
		t.Fatalf("cancelled shadow took %s to return; the timeout is 2s", elapsed)
	}
	var ok int
	if err := f.db.QueryRow(f.ctx, `select count(*) from job_targets where job_id = $1 and shadow_status = 'ok'`, m.ID).Scan(&ok); err != nil {
		t.Fatal(err)
	}
	// 5 sampled targets took 10 requests; the pass answered the next 39 before the cancel.
	if ok < 5 || ok >= cancelAt {
		t.Fatalf("%d outcomes stored, want those completed before the cancel", ok)
	}
	// The run did not finish: no verdict, and the job is planned again rather than "shadowing"
	// with nothing running (issue 18).
	if s := f.jobStatus(m.ID); s != "planned" {
		t.Fatalf("job status %s, want planned: the interrupted run must return the job to its prior status", s)
	}
	if _, err := f.store.ShadowVerdictsLatest(f.ctx, m.ID); !errors.Is(err, ledger.ErrNoVerdict) {
		t.Fatalf("a cancelled run recorded a verdict: %v", err)
	}
	if !strings.Contains(err.Error(), "job "+m.ID+" is planned again") {
		t.Errorf("err %q does not say where the job went", err)
	}
	var returnedTo string
	if err := f.db.QueryRow(f.ctx, `select details->>'returnedTo' from audit where job_id = $1 and action = 'shadow.stopped'`, m.ID).Scan(&returnedTo); err != nil || returnedTo != "planned" {
		t.Fatalf("audit of the return: %q, %v", returnedTo, err)
	}
}

// A shadowed job interrupted while shadowing again is shadowed again, its earlier verdict the
// latest: execute may go on under the verdict it had.
func TestShadowInterruptedRerunReturnsToShadowed(t *testing.T) {
	t.Parallel()
	f, m := standardJob(t)
	first, err := f.run(f.options(m, nil))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(f.ctx)
	defer cancel()
	// Cancelled as the sample is shadowed: after the job was marked shadowing.
	interrupt := func(o *shadow.Options) {
		o.Stage = func(s string) {
			if strings.HasPrefix(s, "shadowing the sample") {
				cancel()
			}
		}
	}
	if _, err := shadow.Run(ctx, f.env.Conn, f.env.JS, f.store, f.options(m, interrupt)); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if s := f.jobStatus(m.ID); s != "shadowed" {
		t.Fatalf("job status %s, want shadowed: its status before the interrupted run", s)
	}
	var stops int
	if err := f.db.QueryRow(f.ctx, `select count(*) from audit where job_id = $1 and action = 'shadow.stopped' and details->>'returnedTo' = 'shadowed'`, m.ID).Scan(&stops); err != nil || stops != 1 {
		t.Fatalf("audit of the return: %d, %v", stops, err)
	}
	v, err := f.store.ShadowVerdictsLatest(f.ctx, m.ID)
	if err != nil || v.Pass != first.Verdict.Pass {
		t.Fatalf("latest verdict %+v, %v; want the first run's", v, err)
	}
}

func TestShadowRefusesASecondRunOfTheSameJob(t *testing.T) {
	t.Parallel()
	f, m := standardJob(t)
	release, err := f.store.ShadowLock(f.ctx, m.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if _, err := f.run(f.options(m, nil)); !errors.Is(err, ledger.ErrShadowRunning) {
		t.Fatalf("err = %v, want ErrShadowRunning while another run holds the job", err)
	}
	if s := f.jobStatus(m.ID); s != "planned" {
		t.Fatalf("job status %s, want planned: the refused run must not touch the job", s)
	}
}

func TestNormaliseReportsEveryProblem(t *testing.T) {
	t.Parallel()
	o := shadow.Options{
		Concurrency: 2000, Sample: -1, Timeout: -time.Second, IgnoreFields: []string{"ok.path", "a..b", "lines[0]"},
		Thresholds: shadow.Thresholds{MaxErrorRatio: 2, MaxCallsOverExpected: -1}, ReportPath: "/nonexistent/dir/r.json",
	}
	err := o.Normalise()
	var oe *shadow.OptionsError
	if !errors.As(err, &oe) || !errors.Is(err, shadow.ErrBadOptions) {
		t.Fatalf("err = %v, want an OptionsError matching ErrBadOptions", err)
	}
	for _, want := range []string{"manifest", "--concurrency 2000", "--sample -1", "--timeout", `"a..b"`, `"lines[0]"`,
		"--max-error-ratio 2", "--max-calls-over -1", "/nonexistent/dir"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "ok.path") || len(oe.Problems) != 9 {
		t.Errorf("want 9 problems, the valid path not among them:\n%v", err)
	}

	d := shadow.Options{Manifest: &manifest.Manifest{}, Thresholds: shadow.DefaultThresholds()}
	if err := d.Normalise(); err != nil {
		t.Fatal(err)
	}
	if d.Concurrency != 16 || d.Sample != 100 || d.Timeout != 5*time.Second || d.Actor != "unknown" || d.Now == nil {
		t.Fatalf("defaults %+v", d)
	}
}

func eventID(i int) string { return fmt.Sprintf("evt-%05d", i) }

func hasReason(v shadow.Verdict, part string) bool {
	for _, r := range v.Reasons {
		if strings.Contains(r, part) {
			return true
		}
	}
	return false
}

// Reasons that carry numbers and hosts are one failure group to the sample, as to inspect: 40
// targets over 40 raw reasons are one stratum, and the raw reason stays on each item.
func TestShadowSampleIsStratifiedByFailureGroupNotRawReason(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for i := range 40 {
		f.dlq(fmt.Sprintf("g%02d", i), fmt.Sprintf("provider timeout after %ds on host pay-%d", 10+i, i), charge{AmountCents: 1000 + i})
	}
	f.dlq("g99", "bad schema", charge{AmountCents: 5})
	m := f.plan()
	f.serve(behaviour{})
	r := f.mustRun(f.options(m, func(o *shadow.Options) { o.Sample = 10 }))
	want := map[string]int{"provider timeout after <n>s on host pay-<n>": 9, "bad schema": 1}
	if !maps.Equal(r.Sample.PerReason, want) {
		t.Fatalf("sample per stratum %v, want %v", r.Sample.PerReason, want)
	}
	for _, it := range r.Sample.Items {
		if strings.Contains(it.FailureReason, "<n>") {
			t.Fatalf("item %s carries its group %q, want its own reason", it.EventID, it.FailureReason)
		}
	}
}
