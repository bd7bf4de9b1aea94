package history_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/replayctl/replayctl/apikey"
	"github.com/replayctl/replayctl/fingerprint"
	"github.com/replayctl/replayctl/history"
	"github.com/replayctl/replayctl/internal/testenv/exectest"
	"github.com/replayctl/replayctl/internal/testenv/pgtest"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/ledger/ledgertest"
	"github.com/replayctl/replayctl/planner"
)

func writeFile(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// The day-one double charge: events the old system handled have no ledger row, and a replay of
// the DLQ would charge them again. Imported, plan keeps them out as done, with or without a
// fingerprint, and a live copy of one is a duplicate the provider never sees.
func TestImportedHistoryIsDoneForPlanAndForTheSDK(t *testing.T) {
	t.Parallel()
	e := exectest.New(t, exectest.Options{})
	for i := range 4 {
		e.PublishDLQ(exectest.EventID(i), exectest.Order(i))
	}
	order1, _ := json.Marshal(exectest.Order(1))
	yesterday := time.Now().Add(-24 * time.Hour).UTC().Format(time.RFC3339)
	path := writeFile(t, "old.jsonl", fmt.Sprintf(`{"eventId":%q,"processedAt":%q}
{"eventId":%q,"processedAt":%q,"requestHash":%q,"effectCount":2}
`, exectest.EventID(0), yesterday, exectest.EventID(1), yesterday, fingerprint.Payload(order1)))

	rep, err := history.Import(e.Ctx, e.Store, history.Options{Consumer: exectest.Consumer, Path: path, Actor: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Imported != 2 || rep.WithoutFingerprint != 1 || rep.HistoryStartsAt == nil {
		t.Fatalf("report %+v: want 2 imported, 1 without a fingerprint, a history start", rep)
	}

	m := e.Plan("job-import")
	if m.Stats.Targets != 2 || m.Stats.AlreadyCompleted != 2 || m.Stats.LedgerPayloadMismatch != 0 {
		t.Fatalf("plan: %d targets, %d already completed, %d conflicts; want the 2 imported events kept out as done",
			m.Stats.Targets, m.Stats.AlreadyCompleted, m.Stats.LedgerPayloadMismatch)
	}
	// 2 calls each for the 2 targets: the imported effectCount is history, not a target's.
	for _, id := range []string{exectest.EventID(0), exectest.EventID(1)} {
		for _, target := range m.EventIDs {
			if target == id {
				t.Errorf("imported event %s is a target", id)
			}
		}
	}

	stop := e.RunConsumer(e.NewConsumer(nil, nil))
	e.PublishLive(exectest.EventID(0), exectest.Order(0))
	e.WaitIdle()
	stop()
	if calls := e.Provider.Calls(exectest.Order(0).OrderID); calls != 0 {
		t.Errorf("a live copy of an imported event made %d provider calls; want a duplicate, none", calls)
	}
	if n := e.QueryInt(`select count(*) from effect_incidents`); n != 0 {
		t.Errorf("a live copy of an imported event recorded %d incidents; want a plain duplicate, not a payload conflict", n)
	}
}

// Plan warns about DLQ messages older than the consumer's history, and the warning goes once
// the history reaches back far enough.
func TestPlanWarnsAboutMessagesOlderThanTheConsumersHistory(t *testing.T) {
	t.Parallel()
	e := exectest.New(t, exectest.Options{})
	for i := range 3 {
		e.PublishDLQ(exectest.EventID(i), exectest.Order(i))
	}
	time.Sleep(10 * time.Millisecond)
	if err := e.Store.FingerprintAlgorithmRegister(e.Ctx, exectest.Consumer, fingerprint.Algorithm, ""); err != nil {
		t.Fatal(err)
	}
	res, err := e.TryPlan("job-warn", func(o *planner.Options) { o.DryRun = true })
	if err != nil {
		t.Fatal(err)
	}
	if !containsWarning(res.Warnings, "3 DLQ messages", "older than consumer billing's ledger history", "replayctl ledger import") {
		t.Fatalf("warnings %q lack the 3 messages older than the history", res.Warnings)
	}

	path := writeFile(t, "old.csv", "eventId,processedAt\nevt-old,2020-01-01\n")
	if _, err := history.Import(e.Ctx, e.Store, history.Options{Consumer: exectest.Consumer, Path: path, Actor: "alice"}); err != nil {
		t.Fatal(err)
	}
	res, err = e.TryPlan("job-warn", func(o *planner.Options) { o.DryRun = true })
	if err != nil {
		t.Fatal(err)
	}
	if containsWarning(res.Warnings, "older than consumer billing's ledger history") {
		t.Fatalf("history imported back to 2020, still warned: %q", res.Warnings)
	}
}

func containsWarning(warnings []string, parts ...string) bool {
	for _, w := range warnings {
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(w, p)
		}
		if ok {
			return true
		}
	}
	return false
}

// A file with bad lines writes nothing and names every bad line with its field; a clean file
// imports in batches, and running it again writes nothing twice and keeps what a consumer
// recorded.
func TestABadLineWritesNothingAndARerunWritesNothingTwice(t *testing.T) {
	t.Parallel()
	store := pgtest.Ledger(t)
	ctx := t.Context()
	bad := writeFile(t, "bad.jsonl", `{"eventId":"a","processedAt":"2026-01-01"}
{"eventId":"b"}
{"event_id":"c","processedAt":"2026-01-01"}
{"eventId":"d","processedAt":"2026-01-01","state":"reconciled"}
{"eventId":"e","processedAt":"2026-01-01","requestHash":"md5:abc"}
`)
	rep, err := history.Import(ctx, store, history.Options{Consumer: "billing", Path: bad, Actor: "alice"})
	if !errors.Is(err, history.ErrInvalidLines) || rep.InvalidLines != 4 {
		t.Fatalf("err %v, %d invalid lines; want ErrInvalidLines and 4", err, rep.InvalidLines)
	}
	want := []string{"line 2, field processedAt: missing", `line 3, field event_id: unknown field "event_id": did you mean "eventId"?`,
		`line 4, field state: "reconciled"`, "line 5, field requestHash:"}
	for i, w := range want {
		if !strings.HasPrefix(rep.Errors[i].Error(), w) {
			t.Errorf("error %d %q, want it to start %q", i, rep.Errors[i].Error(), w)
		}
	}
	if n := countRows(t, store); n != 0 {
		t.Fatalf("a file with bad lines wrote %d rows", n)
	}

	var b strings.Builder
	b.WriteString("eventId,processedAt,state,effectVersion\n")
	for i := range 7 {
		fmt.Fprintf(&b, "evt-%d,2026-01-0%d,completed,1\n", i, i+1)
	}
	b.WriteString("evt-7,2026-01-08,uncertain,1\n")
	good := writeFile(t, "good.csv", b.String())
	// A live row of evt-3 under version 1, in processing: the import must leave it as it is.
	ledgertest.InsertEffects(t, pgtest.Pool(t, store), ledgertest.Effect{EventID: "evt-3", State: "processing", RequestHash: "sha256:live"})

	dry, err := history.Import(ctx, store, history.Options{Consumer: "billing", Path: good, Actor: "alice", DryRun: true, BatchSize: 3})
	if err != nil || dry.Records != 8 || dry.Imported != 7 || dry.AlreadyInLedger != 1 || countRows(t, store) != 1 {
		t.Fatalf("dry run: %v %+v, %d rows; want 7 new, 1 present, nothing written", err, dry, countRows(t, store))
	}
	rep, err = history.Import(ctx, store, history.Options{Consumer: "billing", Path: good, Actor: "alice", BatchSize: 3})
	if err != nil || rep.Imported != 7 || rep.AlreadyInLedger != 1 || rep.Batches != 3 || rep.Uncertain != 1 {
		t.Fatalf("import: %v %+v; want 7 new and 1 present in 3 batches, 1 uncertain", err, rep)
	}
	again, err := history.Import(ctx, store, history.Options{Consumer: "billing", Path: good, Actor: "alice", BatchSize: 3})
	if err != nil || again.Imported != 0 || again.AlreadyInLedger != 8 {
		t.Fatalf("second run: %v %+v; want nothing new", err, again)
	}
	var state string
	if err := pgtest.Pool(t, store).QueryRow(ctx, `select state from effects where consumer = 'billing' and event_id = 'evt-3'`).Scan(&state); err != nil || state != "processing" {
		t.Errorf("the live row of evt-3 is %q (%v) after the import; want processing, untouched", state, err)
	}
	var calls int
	if err := pgtest.Pool(t, store).QueryRow(ctx, `select calls_started from effects where consumer = 'billing' and event_id = 'evt-7'`).Scan(&calls); err != nil || calls != 1 {
		t.Errorf("the imported uncertain row has calls_started %d (%v); want 1, so it is never run again", calls, err)
	}
	var audits int
	if err := pgtest.Pool(t, store).QueryRow(ctx, `select count(*) from audit where action = 'ledger.import' and details->>'imported' = '7'`).Scan(&audits); err != nil || audits != 1 {
		t.Errorf("%d audit entries of the import (%v); want 1: the run that wrote, not the dry run or the rerun", audits, err)
	}
}

func countRows(t *testing.T, store *ledger.Store) int {
	t.Helper()
	var n int
	if err := pgtest.Pool(t, store).QueryRow(t.Context(), `select count(*) from effects`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A file that is one long line (a JSON array, say) is refused at its first line, once: the
// check ends instead of counting the same line for ever.
func TestAFileWithoutLineBreaksIsRefusedOnce(t *testing.T) {
	t.Parallel()
	store := pgtest.Ledger(t)
	big := `[` + strings.Repeat(`{"eventId":"a","processedAt":"2026-01-01"},`, 40_000) + `{}]`
	path := writeFile(t, "array.jsonl", big)
	done := make(chan struct{})
	var rep *history.Report
	var err error
	go func() {
		defer close(done)
		rep, err = history.Import(t.Context(), store, history.Options{Consumer: "billing", Path: path, Actor: "alice"})
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the check of a file without line breaks did not end")
	}
	if !errors.Is(err, history.ErrInvalidLines) || rep.InvalidLines != 1 || !strings.Contains(rep.Errors[0].Problem, "longer than") {
		t.Fatalf("err %v, report %+v; want one invalid line saying it is too long", err, rep)
	}
}

// cancelAfterDefaults is the ledger, with ctx cancelled once the import has read what it needs
// before the check: a Ctrl-C that lands while the file is being checked.
type cancelAfterDefaults struct {
	*ledger.Store
	cancel context.CancelFunc
}

func (c cancelAfterDefaults) RetentionPoliciesList(ctx context.Context, kind apikey.PolicyKind, name string) ([]apikey.Policy, error) {
	defer c.cancel()
	return c.Store.RetentionPoliciesList(ctx, kind, name)
}

// A Ctrl-C during the check of a large file stops it there, with nothing written.
func TestTheCheckOfALargeFileStopsWhenCancelled(t *testing.T) {
	t.Parallel()
	store := pgtest.Ledger(t)
	var b strings.Builder
	for i := range 50_000 {
		fmt.Fprintf(&b, "{\"eventId\":\"e-%d\",\"processedAt\":\"2026-01-01\"}\n", i)
	}
	path := writeFile(t, "big.jsonl", b.String())
	ctx, cancel := context.WithCancel(t.Context())
	rep, err := history.Import(ctx, cancelAfterDefaults{store, cancel}, history.Options{Consumer: "billing", Path: path, Actor: "alice"})
	if !errors.Is(err, context.Canceled) || rep == nil || !rep.Interrupted || rep.Records >= 50_000 || countRows(t, store) != 0 {
		t.Fatalf("cancelled check: err %v, report %+v, %d rows; want it stopped early with nothing written", err, rep, countRows(t, store))
	}
}
