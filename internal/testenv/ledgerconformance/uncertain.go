package ledgerconformance

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/ledger/ledgertest"
	"github.com/replayctl/replayctl/reconcile"
)

// UncertainStore is what reconcile's run and resolve read and write.
type UncertainStore interface {
	reconcile.Ledger
	reconcile.ResolveLedger
}

// UncertainSeeder writes the rows reconcile only reads and changes them as others would (an
// instance killed in its call, an earlier look-up, an operator by hand), and reads back what
// reconcile writes beside the rows: job targets and audit entries.
type UncertainSeeder interface {
	AddEffects(effects ...ledgertest.Effect)
	AddJob(j ledgertest.Job)
	AddTargets(jobID, status string, eventIDs ...string)
	StickLeases(owner string, calls int, lapsedAgo time.Duration, eventIDs ...string)
	AskedAgo(d time.Duration, eventIDs ...string)
	SettleByHand(eventIDs ...string)
	TargetStatuses(jobID string) map[string]string
	AuditActions() []string
}

// Uncertain checks reconcile.Ledger and reconcile.ResolveLedger: open returns an empty store of
// its own for each subtest, and the seeder that writes into it.
func Uncertain(t *testing.T, open func(t *testing.T) (UncertainStore, UncertainSeeder)) {
	uncertain := func(id string, version int) ledgertest.Effect {
		return ledgertest.Effect{EventID: id, Version: version, State: "uncertain", CallsStarted: 1}
	}
	t.Run("pages hold one consumer's uncertain rows in byte order, after the cursor", func(t *testing.T) {
		store, seed := open(t)
		mailer := uncertain("evt-m", 1)
		mailer.Consumer = "mailer"
		seed.AddEffects(uncertain("evt-b", 1), uncertain("evt-a", 2), uncertain("evt-a", 1), uncertain("Evt-z", 1), mailer,
			ledgertest.Effect{EventID: "evt-c"}, ledgertest.Effect{EventID: "evt-d", State: "processing", CallsStarted: 1})
		var got []string
		var after *ledger.UncertainCursor
		for page := 0; page < 4; page++ {
			rows, err := store.EffectsUncertainPage(t.Context(), ledger.UncertainFilter{Consumer: "billing"}, after, 2)
			if err != nil {
				t.Fatal(err)
			}
			if len(rows) == 0 {
				break
			}
			for _, r := range rows {
				got = append(got, keyOf(r))
				if r.State != "uncertain" || r.Stuck || r.RequestHash != "sha256:"+r.EventID || r.RequestHashAlg != "canonical-json-v1" ||
					r.CallsStarted != 1 || refsOf(t, r.ExternalRefs) != "" || r.ReviewedAt != nil || r.Age < 0 {
					t.Errorf("row %+v", r)
				}
			}
			last := rows[len(rows)-1]
			after = &ledger.UncertainCursor{EventID: last.EventID, EffectVersion: last.EffectVersion}
		}
		if want := "Evt-z/1 evt-a/1 evt-a/2 evt-b/1"; strings.Join(got, " ") != want {
			t.Errorf("paged %v, want %s", got, want)
		}
		if rows, err := store.EffectsUncertainPage(t.Context(), ledger.UncertainFilter{Consumer: "billing"}, nil, 0); err != nil || len(rows) != 0 {
			t.Errorf("limit 0: %d rows, %v", len(rows), err)
		}
	})
	t.Run("filters keep one job's rows, rows older than a wait, and rows due for a look-up", func(t *testing.T) {
		store, seed := open(t)
		old, asked, askedLongAgo, fresh := uncertain("evt-old", 2), uncertain("evt-asked", 2), uncertain("evt-asked-long-ago", 2), uncertain("evt-fresh", 2)
		old.UpdatedAgo, asked.UpdatedAgo, askedLongAgo.UpdatedAgo = time.Hour, time.Hour, time.Hour
		old.JobID, fresh.JobID = "job-1", "job-1"
		seed.AddEffects(old, asked, askedLongAgo, fresh)
		// Asked 50 minutes into its hour: it waits 50 more. Asked 5 minutes into it: it waited 5.
		seed.AskedAgo(10*time.Minute, "evt-asked")
		seed.AskedAgo(55*time.Minute, "evt-asked-long-ago")
		for _, c := range []struct {
			filter ledger.UncertainFilter
			want   string
		}{
			{ledger.UncertainFilter{JobID: "job-1"}, "evt-fresh/2 evt-old/2"},
			{ledger.UncertainFilter{OlderThan: 30 * time.Minute}, "evt-asked/2 evt-asked-long-ago/2 evt-old/2"},
			{ledger.UncertainFilter{Due: true}, "evt-asked-long-ago/2 evt-fresh/2 evt-old/2"},
			{ledger.UncertainFilter{Due: true, OlderThan: 30 * time.Minute, JobID: "job-1"}, "evt-old/2"},
		} {
			c.filter.Consumer = "billing"
			rows, err := store.EffectsUncertainPage(t.Context(), c.filter, nil, 100)
			if err != nil {
				t.Fatal(err)
			}
			if got := keysOf(rows); got != c.want {
				t.Errorf("%+v listed %s, want %s", c.filter, got, c.want)
			}
		}
	})
	t.Run("stuck leases are listed apart: processing, a call started, lapsed long ago", func(t *testing.T) {
		store, seed := open(t)
		seed.AddEffects(uncertain("evt-stuck", 1), uncertain("evt-recent", 1), uncertain("evt-no-call", 1), uncertain("evt-uncertain", 1))
		seed.StickLeases("host-1", 2, 20*time.Minute, "evt-stuck")
		seed.StickLeases("host-1", 2, time.Minute, "evt-recent")
		seed.StickLeases("host-1", 0, 20*time.Minute, "evt-no-call")
		rows, err := store.EffectsUncertainPage(t.Context(), ledger.UncertainFilter{Consumer: "billing", Stuck: true}, nil, 100)
		if err != nil {
			t.Fatal(err)
		}
		if keysOf(rows) != "evt-stuck/1" || !rows[0].Stuck || rows[0].State != "processing" || rows[0].LeaseOwner != "host-1" ||
			rows[0].CallsStarted != 2 || rows[0].Age < 20*time.Minute {
			t.Fatalf("stuck page %+v", rows)
		}
		uncertainOnly, err := store.EffectsUncertainPage(t.Context(), ledger.UncertainFilter{Consumer: "billing"}, nil, 100)
		if err != nil || keysOf(uncertainOnly) != "evt-uncertain/1" {
			t.Fatalf("uncertain page %s, %v", keysOf(uncertainOnly), err)
		}
	})
	t.Run("verdicts settle rows, their replay's targets and one audit entry each", func(t *testing.T) {
		store, seed := open(t)
		seed.AddJob(ledgertest.Job{ID: "job-1"})
		happened, unknown, older := uncertain("evt-1", 2), uncertain("evt-2", 2), uncertain("evt-3", 1)
		happened.JobID, unknown.JobID, older.JobID = "job-1", "job-1", "job-1"
		happened.CallsStarted = 2
		seed.AddEffects(happened, unknown, older)
		seed.AddTargets("job-1", ledger.TargetPublished, "evt-1", "evt-2", "evt-3")
		rows := listAll(t, store, ledger.UncertainFilter{Consumer: "billing"})
		applied, err := store.EffectsReconcileApply(t.Context(), ledger.ReconcileBatch{Consumer: "billing", Actor: "alice", RunID: "run-1",
			Verdicts: []ledger.ReconcileVerdict{
				verdictOn(rows["evt-1/2"], ledger.VerdictHappened, `["ch_9", "ch_9"]`, "charged"),
				verdictOn(rows["evt-2/2"], ledger.VerdictUnknown, "", "provider timed out"),
				verdictOn(rows["evt-3/1"], ledger.VerdictNotHappened, "", ""),
			}})
		if err != nil {
			t.Fatal(err)
		}
		if len(applied) != 3 || applied[0].State != ledger.EffectReconciled || !applied[0].TargetUpdated ||
			applied[1].State != "uncertain" || !applied[1].TargetUpdated || applied[1].JobID != "job-1" ||
			applied[2].State != "uncertain" || applied[2].TargetUpdated {
			t.Fatalf("applied %+v; want evt-1 reconciled, evt-2 and evt-3 for review, the targets of version 2 updated", applied)
		}
		one := readEvent(t, store, "evt-1")
		if one.State != ledger.EffectReconciled || refsOf(t, one.ExternalRefs) != "ch_9" || one.EffectCount != 2 ||
			one.ReviewVerdict != ledger.VerdictHappened || one.ReviewState != "" || one.ReviewNote != "charged" ||
			one.ReviewedBy != "alice" || one.ReviewedAt == nil || !one.UpdatedAt.After(rows["evt-1/2"].UpdatedAt) {
			t.Errorf("reconciled row %+v", one)
		}
		two := readEvent(t, store, "evt-2")
		if two.State != "uncertain" || two.ReviewState != ledger.ReviewManual || two.ReviewVerdict != ledger.VerdictUnknown ||
			two.ReviewNote != "provider timed out" || !two.UpdatedAt.Equal(rows["evt-2/2"].UpdatedAt) {
			t.Errorf("row for review %+v; its age must keep counting", two)
		}
		if got := seed.TargetStatuses("job-1"); got["evt-1"] != ledger.TargetCompleted || got["evt-2"] != ledger.TargetPublished ||
			got["evt-3"] != ledger.TargetPublished {
			t.Errorf("targets %v", got)
		}
		if got := reconcileActions(seed); got != "reconcile.manual_review reconcile.manual_review reconcile.reconciled" {
			t.Errorf("audit %s", got)
		}
	})
	t.Run("a row changed since it was listed is left alone", func(t *testing.T) {
		store, seed := open(t)
		seed.AddEffects(uncertain("evt-1", 1), uncertain("evt-2", 1), uncertain("evt-3", 1), uncertain("evt-4", 1))
		seed.AskedAgo(time.Hour, "evt-4")
		rows := listAll(t, store, ledger.UncertainFilter{Consumer: "billing"})
		// Settled by hand, asked for the first time, asked again by a concurrent run.
		seed.SettleByHand("evt-1")
		seed.AskedAgo(time.Second, "evt-2", "evt-4")
		gone := verdictOn(rows["evt-3/1"], ledger.VerdictHappened, "", "")
		gone.EffectVersion = 7
		applied, err := store.EffectsReconcileApply(t.Context(), ledger.ReconcileBatch{Consumer: "billing", Actor: "alice", RunID: "run-1",
			Verdicts: []ledger.ReconcileVerdict{verdictOn(rows["evt-1/1"], ledger.VerdictHappened, "", ""),
				verdictOn(rows["evt-2/1"], ledger.VerdictHappened, "", ""), gone,
				verdictOn(rows["evt-4/1"], ledger.VerdictHappened, "", "")}})
		if err != nil || len(applied) != 0 {
			t.Fatalf("applied %+v, %v; want nothing", applied, err)
		}
		if got := reconcileActions(seed); got != "" {
			t.Errorf("audited %s for rows left alone", got)
		}
	})
	t.Run("a verdict of no known kind refuses the whole batch", func(t *testing.T) {
		store, seed := open(t)
		seed.AddEffects(uncertain("evt-1", 1), uncertain("evt-2", 1))
		rows := listAll(t, store, ledger.UncertainFilter{Consumer: "billing"})
		_, err := store.EffectsReconcileApply(t.Context(), ledger.ReconcileBatch{Consumer: "billing", Actor: "alice", RunID: "run-1",
			Verdicts: []ledger.ReconcileVerdict{verdictOn(rows["evt-1/1"], ledger.VerdictHappened, "", ""),
				verdictOn(rows["evt-2/1"], "maybe", "", "")}})
		if err == nil || !strings.Contains(err.Error(), `"maybe"`) || !strings.Contains(err.Error(), "nothing was applied") {
			t.Fatalf("err %v", err)
		}
		if one := readEvent(t, store, "evt-1"); one.State != "uncertain" || one.ReviewedAt != nil {
			t.Errorf("the batch's valid verdict was applied: %+v", one)
		}
	})
	t.Run("a person's not happened releases the row with no call started and fails its target", func(t *testing.T) {
		store, seed := open(t)
		seed.AddJob(ledgertest.Job{ID: "job-1"})
		released, kept := uncertain("evt-1", 2), uncertain("evt-2", 2)
		released.JobID, kept.JobID = "job-1", "job-1"
		seed.AddEffects(released, kept)
		seed.AddTargets("job-1", ledger.TargetUncertain, "evt-1", "evt-2")
		rows := listAll(t, store, ledger.UncertainFilter{Consumer: "billing"})
		notHappened, unknown := verdictOn(rows["evt-1/2"], ledger.VerdictNotHappened, "", "checked the dashboard"),
			verdictOn(rows["evt-2/2"], ledger.VerdictUnknown, "", "")
		notHappened.Resolved, unknown.Resolved = true, true
		applied, err := store.EffectsReconcileApply(t.Context(), ledger.ReconcileBatch{Consumer: "billing", Actor: "bob", RunID: "resolve-1",
			Verdicts: []ledger.ReconcileVerdict{notHappened, unknown}})
		if err != nil {
			t.Fatal(err)
		}
		if len(applied) != 1 || applied[0].EventID != "evt-1" || applied[0].State != ledger.EffectReceived || !applied[0].TargetUpdated {
			t.Fatalf("applied %+v; want evt-1 released, the unknown resolution refused", applied)
		}
		if r := readEvent(t, store, "evt-1"); r.State != ledger.EffectReceived || r.CallsStarted != 0 || r.ReviewState != "" ||
			r.ReviewedBy != "bob" {
			t.Errorf("released row %+v", r)
		}
		if got := seed.TargetStatuses("job-1"); got["evt-1"] != ledger.TargetFailed || got["evt-2"] != ledger.TargetUncertain {
			t.Errorf("targets %v", got)
		}
		if got := reconcileActions(seed); got != ledger.AuditResolved {
			t.Errorf("audit %s", got)
		}
	})
	t.Run("a stuck lease is settled only while it is still stuck", func(t *testing.T) {
		store, seed := open(t)
		seed.AddEffects(uncertain("evt-1", 1), uncertain("evt-2", 1), uncertain("evt-3", 1))
		seed.StickLeases("host-1", 1, 20*time.Minute)
		rows := listAll(t, store, ledger.UncertainFilter{Consumer: "billing", Stuck: true})
		seed.StickLeases("host-2", 1, time.Minute, "evt-2")    // taken over, its lease live again
		seed.StickLeases("host-3", 1, 30*time.Minute, "evt-3") // still stuck, but not as listed
		one, two, three := verdictOn(rows["evt-1/1"], ledger.VerdictUnknown, "", ""), verdictOn(rows["evt-2/1"], ledger.VerdictHappened, "", ""),
			verdictOn(rows["evt-3/1"], ledger.VerdictHappened, "", "")
		applied, err := store.EffectsReconcileApply(t.Context(), ledger.ReconcileBatch{Consumer: "billing", Actor: "alice", RunID: "run-1",
			Verdicts: []ledger.ReconcileVerdict{one, two, three}})
		if err != nil {
			t.Fatal(err)
		}
		if len(applied) != 1 || applied[0].EventID != "evt-1" || applied[0].State != "uncertain" {
			t.Fatalf("applied %+v; want the stuck evt-1 for review and evt-2 (taken over) and evt-3 (changed) left alone", applied)
		}
		r := readEvent(t, store, "evt-1")
		if r.ReviewState != ledger.ReviewManual || r.Age > time.Minute {
			t.Errorf("stuck row after the verdict %+v; want uncertain for review, its age counted from now", r)
		}
	})
	t.Run("an event's rows for review are all its versions, any state, by version", func(t *testing.T) {
		store, seed := open(t)
		seed.AddEffects(uncertain("evt-1", 3), ledgertest.Effect{EventID: "evt-1"}, ledgertest.Effect{EventID: "evt-1", Version: 2, State: "received"},
			uncertain("evt-2", 1))
		rows, err := store.EffectsOfEventForReview(t.Context(), "billing", "evt-1")
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range rows {
			got = append(got, keyOf(r)+":"+r.State)
		}
		if want := "evt-1/1:completed evt-1/2:received evt-1/3:uncertain"; strings.Join(got, " ") != want {
			t.Errorf("got %v, want %s", got, want)
		}
		if rows, err := store.EffectsOfEventForReview(t.Context(), "mailer", "evt-1"); err != nil || len(rows) != 0 {
			t.Errorf("another consumer's: %+v, %v", rows, err)
		}
	})
}

func keyOf(r ledger.UncertainRow) string { return r.EventID + "/" + strconv.Itoa(r.EffectVersion) }

func keysOf(rows []ledger.UncertainRow) string {
	keys := make([]string, len(rows))
	for i, r := range rows {
		keys[i] = keyOf(r)
	}
	return strings.Join(keys, " ")
}

// refsOf returns a row's references, sorted and joined.
func refsOf(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var refs []string
	if err := json.Unmarshal(raw, &refs); err != nil {
		t.Fatalf("external refs %s: %v", raw, err)
	}
	slices.Sort(refs)
	return strings.Join(refs, " ")
}

func listAll(t *testing.T, store UncertainStore, f ledger.UncertainFilter) map[string]ledger.UncertainRow {
	t.Helper()
	rows, err := store.EffectsUncertainPage(t.Context(), f, nil, 1000)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]ledger.UncertainRow{}
	for _, r := range rows {
		out[keyOf(r)] = r
	}
	return out
}

func verdictOn(r ledger.UncertainRow, verdict, refs, note string) ledger.ReconcileVerdict {
	if r.EventID == "" {
		panic("verdictOn: a row the page did not list")
	}
	return ledger.ReconcileVerdict{EventID: r.EventID, EffectVersion: r.EffectVersion, Verdict: verdict, FoundRefs: json.RawMessage(refs),
		Note: note, SeenUpdatedAt: r.UpdatedAt, SeenReviewedAt: r.ReviewedAt, Stuck: r.Stuck}
}

func readEvent(t *testing.T, store UncertainStore, eventID string) ledger.UncertainRow {
	t.Helper()
	rows, err := store.EffectsOfEventForReview(t.Context(), "billing", eventID)
	if err != nil || len(rows) != 1 {
		t.Fatalf("rows of %s: %+v, %v", eventID, rows, err)
	}
	return rows[0]
}

// reconcileActions returns the audit actions reconcile wrote, sorted: one batch's entries are
// written by one statement, in no order.
func reconcileActions(seed UncertainSeeder) string {
	var out []string
	for _, a := range seed.AuditActions() {
		if strings.HasPrefix(a, "reconcile.") {
			out = append(out, a)
		}
	}
	slices.Sort(out)
	return strings.Join(out, " ")
}
