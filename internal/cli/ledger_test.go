package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"

	"github.com/replayctl/replayctl/consumer"
	"github.com/replayctl/replayctl/fingerprint"
	"github.com/replayctl/replayctl/health"
	"github.com/replayctl/replayctl/internal/billing"
	"github.com/replayctl/replayctl/internal/cli/ledgercmd"
	"github.com/replayctl/replayctl/internal/cmdutil"
	"github.com/replayctl/replayctl/internal/testenv/exectest"
	"github.com/replayctl/replayctl/internal/testenv/pgtest"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/ledger/ledgertest"
)

// replaceLedgerVerb swaps the ledger command's subcommand of c's name for c.
func replaceLedgerVerb(build func(f *cmdutil.Factory) *cobra.Command) func(*cmdutil.Factory, *cobra.Command) {
	return func(f *cmdutil.Factory, root *cobra.Command) {
		for _, parent := range root.Commands() {
			if parent.Name() == "ledger" {
				replaceCommand(parent, build(f))
			}
		}
	}
}

// ledgerWorld is a migrated ledger reached through --database-url, as an operator would.
type ledgerWorld struct {
	store *ledger.Store
	flags string
}

func newLedgerWorld(t *testing.T) *ledgerWorld {
	t.Helper()
	store, url := pgtest.LedgerWithURL(t)
	return &ledgerWorld{store: store, flags: "--database-url '" + url + "' --actor alice"}
}

func (w *ledgerWorld) exec(t *testing.T, sql string, args ...any) {
	t.Helper()
	if _, err := pgtest.Pool(t, w.store).Exec(t.Context(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func (w *ledgerWorld) count(t *testing.T, sql string) int {
	t.Helper()
	var n int
	if err := pgtest.Pool(t, w.store).QueryRow(t.Context(), sql).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// seedPrunable gives billing 3 rows past evidence_until, 2 bodies past replay_until and 1 fresh row.
func (w *ledgerWorld) seedPrunable(t *testing.T) {
	t.Helper()
	w.exec(t, `
insert into effects (consumer, event_id, effect_version, state, request_hash, result_hash, result_body, replay_until, evidence_until)
select 'billing', 'evt-' || i, 1, 'completed', 'sha256:' || i, 'sha256:r' || i, '{"ok": true}',
       now() + case when i <= 5 then interval '-1 day' else interval '1 day' end,
       now() + case when i <= 3 then interval '-1 day' else interval '300 days' end
  from generate_series(1, 6) i`)
}

// remaining counts billing's rows that are not tombstones, and its result bodies.
func (w *ledgerWorld) remaining(t *testing.T) (rows, bodies int) {
	t.Helper()
	return w.count(t, `select count(*) from effects where consumer = 'billing' and state <> 'expired'`),
		w.count(t, `select count(result_body) from effects where consumer = 'billing'`)
}

func TestLedgerPruneAndStatsFlags(t *testing.T) {
	t.Parallel()
	var prune *ledgercmd.LedgerPruneOptions
	_, stderr, code := execCommand(t, false,
		"ledger prune --consumer billing --dry-run --yes --batch-size 500 --as-of 2026-12-01 --incident-retention 30d --tombstone-retention 3650d --compact-after 14d --actor bob --json",
		replaceLedgerVerb(func(f *cmdutil.Factory) *cobra.Command {
			return ledgercmd.NewCmdLedgerPrune(f, func(o *ledgercmd.LedgerPruneOptions) error { prune = o; return nil })
		}))
	if code != cmdutil.ExitOK || prune == nil {
		t.Fatalf("prune: exit %d: %s", code, stderr)
	}
	if r := prune.Request; r.Consumer != "billing" || r.AllConsumers || r.BatchSize != 500 || r.Actor != "bob" ||
		!prune.DryRun || !prune.Yes || !prune.JSON || prune.AsOf != "2026-12-01" || prune.IncidentRetention != "30d" || prune.TombstoneRetention != "3650d" ||
		prune.CompactAfter != "14d" {
		t.Errorf("prune options %+v", *prune)
	}

	var stats *ledgercmd.LedgerStatsOptions
	_, stderr, code = execCommand(t, false, "ledger stats --consumer billing --window 7d --json",
		replaceLedgerVerb(func(f *cmdutil.Factory) *cobra.Command {
			return ledgercmd.NewCmdLedgerStats(f, func(o *ledgercmd.LedgerStatsOptions) error { stats = o; return nil })
		}))
	if code != cmdutil.ExitOK || stats == nil {
		t.Fatalf("stats: exit %d: %s", code, stderr)
	}
	if stats.Request.Consumer != "billing" || stats.Window != "7d" || !stats.JSON {
		t.Errorf("stats options %+v", *stats)
	}
}

func TestLedgerVerbsRefuseBadFlagsWithExit2BeforeConnecting(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ args, want string }{
		{"ledger prune", "name what to prune: --consumer C for one consumer, or --all-consumers"},
		{"ledger prune --consumer billing --all-consumers", "give one of them"},
		{"ledger prune --consumer billing --batch-size 0", "--batch-size 0: must be between 1 and 1000000"},
		{"ledger prune --consumer billing --as-of yesterday", `--as-of "yesterday": want an RFC 3339 time`},
		{"ledger prune --consumer billing --incident-retention 0d", `--incident-retention "0d": want a positive length of time`},
		{"ledger prune --consumer billing extra", "takes no arguments"},
		{"ledger stats", "--consumer is required"},
		{"ledger stats --consumer billing --window 1y", `--window "1y": want a positive length of time in weeks (1w), days (2d)`},
		{"ledger stats --consumer billing --window -1h", `--window "-1h"`},
		{"ledger stats --consumer billing --window 400d", "--window 400d: at most 366d"},
		{"ledger bogus", `unknown command "bogus" for replayctl ledger; use grants or import or prune or stats`},
		{"ledger stast", `unknown command "stast" for replayctl ledger; did you mean stats?`},
		{"reconcile reslove", `unknown command "reslove" for replayctl reconcile; did you mean resolve?`},
	} {
		stdout, stderr, code := execCommand(t, false, tc.args+" --json", noConnections(t))
		var res struct {
			Error    string `json:"error"`
			ExitCode int    `json:"exitCode"`
		}
		if code != cmdutil.ExitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%s: exit %d, stderr %q; want 2 saying %q", tc.args, code, stderr, tc.want)
		}
		if err := json.Unmarshal([]byte(stdout), &res); err != nil || res.ExitCode != cmdutil.ExitUsage || !strings.Contains(res.Error, tc.want) {
			t.Errorf("%s --json: stdout %q; want one JSON error with exitCode 2", tc.args, stdout)
		}
	}
}

func TestLedgerPruneNeedsYesWithoutATerminalAndTheConsumersNameOnOne(t *testing.T) {
	t.Parallel()
	w := newLedgerWorld(t)
	w.seedPrunable(t)

	stdout, stderr, code := runCommand(t, false, "ledger prune --consumer billing "+w.flags)
	if code != cmdutil.ExitGateRefused || !strings.Contains(stderr, "not confirmed: ledger prune would remove 3 rows to tombstones, 0 tombstones to their compact form, 0 tombstones, 2 result bodies and 0 incidents; without a terminal pass --yes") {
		t.Errorf("prune without a terminal or --yes: exit %d, stderr %q; want 3 asking for --yes", code, stderr)
	}
	if stdout != "" {
		t.Errorf("a refused prune printed a result: %q", stdout)
	}
	_, stderr, code = execCommandWithStdin(t, true, "bill\n", "ledger prune --consumer billing "+w.flags)
	if code != cmdutil.ExitGateRefused || !strings.Contains(stderr, `Type "billing" to confirm`) || !strings.Contains(stderr, "not confirmed: nothing was pruned") {
		t.Errorf("prune answered with another name: exit %d, stderr %q; want 3", code, stderr)
	}
	if rows, bodies := w.remaining(t); rows != 6 || bodies != 6 {
		t.Fatalf("refused prunes changed the ledger: %d rows, %d bodies left of 6", rows, bodies)
	}

	stdout, stderr, code = execCommandWithStdin(t, true, "billing\n", "ledger prune --consumer billing "+w.flags)
	if code != cmdutil.ExitOK || !strings.Contains(stderr, "would remove 3 rows to tombstones, 0 tombstones to their compact form, 0 tombstones, 2 result bodies and 0 incidents") {
		t.Fatalf("confirmed prune: exit %d:\n%s\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "ledger prune of consumer billing as of") || !strings.Contains(stdout, "recorded in the audit log") {
		t.Errorf("confirmed prune output:\n%s", stdout)
	}
	if rows, bodies := w.remaining(t); rows != 3 || bodies != 1 {
		t.Errorf("after the prune %d rows and %d bodies, want 3 rows of which 1 keeps its body (and 3 tombstones)", rows, bodies)
	}
	if n := w.count(t, `select count(*) from audit where action = 'ledger.prune' and actor = 'alice'`); n != 1 {
		t.Errorf("%d audit entries by alice, want 1", n)
	}
}

func TestLedgerPruneDryRunThenYesWithJSON(t *testing.T) {
	t.Parallel()
	w := newLedgerWorld(t)
	w.seedPrunable(t)

	stdout, stderr, code := runCommand(t, false, "ledger prune --all-consumers --dry-run "+w.flags)
	if code != cmdutil.ExitOK || !strings.HasPrefix(stdout, "DRY RUN: nothing was pruned.") {
		t.Fatalf("dry run: exit %d, want 0 and a first line saying nothing was pruned:\n%s\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"would remove:", "billing\t3\t0\t0\t2", "total\t3\t0\t0\t2", "incidents recorded before"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("dry run lacks %q:\n%s", want, stdout)
		}
	}
	if rows, bodies := w.remaining(t); rows != 6 || bodies != 6 {
		t.Fatalf("a dry run changed the ledger: %d rows, %d bodies", rows, bodies)
	}

	stdout, stderr, code = runCommand(t, false, "ledger prune --all-consumers --yes --json --batch-size 2 "+w.flags)
	if code != cmdutil.ExitOK {
		t.Fatalf("prune --yes --json: exit %d:\n%s\n%s", code, stdout, stderr)
	}
	var r struct {
		DryRun       bool      `json:"dryRun"`
		AsOf         time.Time `json:"asOf"`
		AllConsumers bool      `json:"allConsumers"`
		Consumers    []struct {
			Consumer   string `json:"consumer"`
			Tombstoned int64  `json:"tombstoned"`
			Rows       int64  `json:"rows"`
			Bodies     int64  `json:"bodies"`
		} `json:"consumers"`
		Total struct {
			Tombstoned int64 `json:"tombstoned"`
			Rows       int64 `json:"rows"`
			Bodies     int64 `json:"bodies"`
		} `json:"total"`
		Incidents   *int64 `json:"incidents"`
		Batches     int    `json:"batches"`
		BatchSize   int    `json:"batchSize"`
		Interrupted *bool  `json:"interrupted"`
	}
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("--json: stdout is not one JSON document: %v\n%s", err, stdout)
	}
	if r.DryRun || !r.AllConsumers || r.AsOf.IsZero() || len(r.Consumers) != 1 || r.Consumers[0].Consumer != "billing" ||
		r.Consumers[0].Tombstoned != 3 || r.Consumers[0].Bodies != 2 || r.Total.Tombstoned != 3 || r.Total.Rows != 0 || r.Total.Bodies != 2 ||
		r.Incidents == nil || r.Interrupted == nil || *r.Interrupted || r.BatchSize != 2 || r.Batches != 3 {
		t.Errorf("--json: %s; want billing 3 rows tombstoned and 2 bodies in 2 + 1 batches of 2", stdout)
	}

	stdout, _, code = runCommand(t, false, "ledger prune --all-consumers --yes "+w.flags)
	if code != cmdutil.ExitOK || !strings.HasPrefix(stdout, "nothing to prune for all consumers as of") {
		t.Errorf("prune with nothing left: exit %d, stdout %q; want 0 and nothing to prune", code, stdout)
	}
	if _, stderr, code := runCommand(t, false, "ledger prune --all-consumers "+w.flags); code != cmdutil.ExitGateRefused ||
		!strings.Contains(stderr, "would remove 0 rows to tombstones, 0 tombstones to their compact form, 0 tombstones, 0 result bodies and 0 incidents; without a terminal pass --yes") {
		t.Errorf("prune with nothing left, without a terminal or --yes: exit %d, stderr %q; want 3 as on any night", code, stderr)
	}
	if stdout, stderr, code := execCommandWithStdin(t, true, "", "ledger prune --all-consumers "+w.flags); code != cmdutil.ExitOK ||
		!strings.HasPrefix(stdout, "nothing to prune") || strings.Contains(stderr, "to confirm") {
		t.Errorf("prune with nothing left on a terminal: exit %d, stdout %q, stderr %q; want 0 without a prompt", code, stdout, stderr)
	}
}

func TestLedgerVerbsRefuseAnUnknownConsumerWithExit2(t *testing.T) {
	t.Parallel()
	w := newLedgerWorld(t)
	w.seedPrunable(t)
	for _, args := range []string{"ledger prune --dry-run --consumer biling", "ledger prune --yes --consumer biling", "ledger stats --consumer biling"} {
		_, stderr, code := runCommand(t, false, args+" "+w.flags)
		if code != cmdutil.ExitUsage || !strings.Contains(stderr, `consumer "biling"; did you mean billing? check --consumer (known consumers: billing)`) {
			t.Errorf("%s: exit %d, stderr %q; want 2 naming the known consumers", args, code, stderr)
		}
	}
	if rows, _ := w.remaining(t); rows != 6 {
		t.Errorf("%d rows left of 6", rows)
	}
}

func TestLedgerStatsTableWarnsAndExitsZero(t *testing.T) {
	t.Parallel()
	w := newLedgerWorld(t)
	completed := make([]ledgertest.Effect, 100)
	for i := range completed {
		completed[i] = ledgertest.Effect{EventID: fmt.Sprintf("evt-%d", i+1), CreatedAgo: time.Hour}
	}
	completed[0].JobID = "job-1"
	ledgertest.InsertEffects(t, pgtest.Pool(t, w.store), completed...)
	// The replay rate is duplicate deliveries over deliveries (issue 15; it used to count the rows
	// replay jobs wrote).
	w.exec(t, `insert into delivery_counts (consumer, day, deliveries, duplicate_deliveries)
values ('billing', (now() at time zone 'utc')::date, 101, 1)`)
	ledgertest.InsertEffects(t, pgtest.Pool(t, w.store), ledgertest.Effect{EventID: "evt-u", State: "uncertain", UpdatedAgo: 20 * time.Minute})

	stdout, stderr, code := runCommand(t, false, "ledger stats --consumer billing "+w.flags)
	if code != cmdutil.ExitOK {
		t.Fatalf("stats with warnings: exit %d, want 0 (a report):\n%s\n%s", code, stdout, stderr)
	}
	for _, want := range []string{
		"ledger stats of consumer billing, last 24h (",
		"METRIC\tVALUE\tWARNS WHEN\tSTATUS",
		"replay rate\t0.99% (1 duplicates of 101 deliveries since ",
		"\t> 0.5%\tWARN",
		"payload mismatches\t0 (0.0 a day)\t>= 10 a day\tok",
		"lease expiries\t0 (0.0 a day)\t>= 10 a day\tok",
		"uncertain\t1 (oldest 20m",
		"any older than 15m\tWARN",
		"WARN replay: 0.99% of the deliveries since ",
		"were answered from the ledger as duplicates (1 of 101), above 0.5%",
		"WARN uncertain: 1 uncertain rows, the oldest uncertain for 20m",
		"what to do: an external write may or may not have happened",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stats lacks %q:\n%s", want, stdout)
		}
	}

	stdout, _, code = runCommand(t, false, "ledger stats --consumer billing --window 2d --json "+w.flags)
	var st struct {
		Consumer      string  `json:"consumer"`
		WindowSeconds float64 `json:"windowSeconds"`
		Replay        struct {
			Deliveries, Duplicates int64
			Rate, MaxRate          float64
			Warn                   bool
		} `json:"replay"`
		Mismatches struct {
			Count     *int64   `json:"count"`
			MaxPerDay *float64 `json:"maxPerDay"`
		} `json:"payloadMismatches"`
		LeaseExpiries *struct{} `json:"leaseExpiries"`
		Uncertain     struct {
			Count                  int64   `json:"count"`
			MaxAgeSeconds          float64 `json:"maxAgeSeconds"`
			MaxAgeThresholdSeconds float64 `json:"maxAgeThresholdSeconds"`
			Warn                   bool    `json:"warn"`
		} `json:"uncertain"`
		Warnings []struct{ Metric, Summary, Action string } `json:"warnings"`
	}
	if err := json.Unmarshal([]byte(stdout), &st); err != nil || code != cmdutil.ExitOK {
		t.Fatalf("--json: exit %d, %v:\n%s", code, err, stdout)
	}
	if st.Consumer != "billing" || st.WindowSeconds != 2*86400 || st.Replay.Deliveries != 101 || st.Replay.Duplicates != 1 ||
		!st.Replay.Warn || st.Replay.MaxRate != 0.005 || st.Mismatches.Count == nil || *st.Mismatches.Count != 0 ||
		st.Mismatches.MaxPerDay == nil || *st.Mismatches.MaxPerDay != 10 || st.LeaseExpiries == nil ||
		st.Uncertain.Count != 1 || !st.Uncertain.Warn || st.Uncertain.MaxAgeThresholdSeconds != 900 || st.Uncertain.MaxAgeSeconds < 1200 {
		t.Errorf("--json: %s", stdout)
	}
	if len(st.Warnings) != 2 || st.Warnings[0].Metric != "replay" || st.Warnings[1].Metric != "uncertain" || st.Warnings[1].Action == "" {
		t.Errorf("--json warnings: %+v, want replay and uncertain, each with an action", st.Warnings)
	}
}

// The consumer SDK is what records conflicts and lapsed leases: stats counts what it recorded.
func TestLedgerStatsCountsTheSDKsConflictsAndLapsedLeases(t *testing.T) {
	t.Parallel()
	w := newExecWorld(t)
	w.RunConsumer(w.NewConsumer(nil, func(cfg *consumer.Config) { cfg.CountsInterval = 20 * time.Millisecond }))
	publish := func(eventID string, o billing.Order) []byte {
		data, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		msg := nats.NewMsg(exectest.OriginalSubject)
		msg.Data = data
		msg.Header.Set("Event-Id", eventID)
		if _, err := w.NATS.JS.PublishMsg(w.Ctx, msg); err != nil {
			t.Fatal(err)
		}
		return data
	}
	completed := func(eventID string) func() bool {
		return func() bool {
			return w.QueryInt(`select count(*) from effects where event_id = $1 and state = 'completed'`, eventID) == 1
		}
	}

	publish("evt-a", exectest.Order(1))
	waitUntil(t, 10*time.Second, "evt-a completed", completed("evt-a"))
	publish("evt-a", exectest.Order(2))
	waitUntil(t, 10*time.Second, "the conflicting evt-a recorded", func() bool {
		return w.QueryInt(`select count(*) from effect_incidents where kind = 'payload_conflict' and event_id = 'evt-a'`) == 1
	})

	// A handler that died before any call: its lease lapsed a minute ago. The next delivery takes
	// the row over, and the lapse is recorded.
	data, err := json.Marshal(exectest.Order(3))
	if err != nil {
		t.Fatal(err)
	}
	ledgertest.InsertEffects(t, w.DB, ledgertest.Effect{EventID: "evt-b", State: "processing", RequestHash: fingerprint.Payload(data),
		LeaseOwner: "billing-dead", LeaseLapsedAgo: time.Minute, Attempts: 1})
	publish("evt-b", exectest.Order(3))
	waitUntil(t, 10*time.Second, "evt-b taken over and completed", completed("evt-b"))
	waitUntil(t, 10*time.Second, "three deliveries flushed to the daily counts", func() bool {
		return w.QueryInt(`select coalesce(sum(deliveries), 0) from delivery_counts where consumer = 'billing'`) == 3
	})

	stdout, stderr, code := w.replayctl(t, "ledger stats --consumer billing --json")
	var st health.Report
	if err := json.Unmarshal([]byte(stdout), &st); err != nil || code != cmdutil.ExitOK {
		t.Fatalf("stats --json: exit %d, %v:\n%s\n%s", code, err, stdout, stderr)
	}
	if st.Mismatches.Count != 1 || st.LeaseExpiries.Count != 1 || st.Replay.Deliveries != 3 || st.Replay.Duplicates != 0 {
		t.Errorf("stats after one conflict and one lapsed lease: mismatches %+v, lease expiries %+v, replay %+v",
			st.Mismatches, st.LeaseExpiries, st.Replay)
	}
	if n := w.QueryInt(`select count(*) from effect_incidents where kind = 'lease_lapsed' and lease_owner = 'billing-dead'`); n != 1 {
		t.Errorf("%d lease lapses of billing-dead recorded, want 1", n)
	}
}

func TestLedgerHelpTeachesWithoutConnecting(t *testing.T) {
	t.Parallel()
	for args, wants := range map[string][]string{
		"ledger --help": {"prune", "stats", "replayctl ledger stats --consumer billing"},
		"ledger prune --help": {"evidence_until has passed become expired tombstones", "five years where it registered none", "oldest first, read from an index of the rows due", "result_hash stay", "never by a storage TTL",
			"Never pruned: rows in processing or uncertain", "run the same command again and it continues",
			"without a terminal pass --yes", "Exits 0 when pruned", "replayctl ledger prune --all-consumers --dry-run", "--batch-size"},
		"ledger stats --help": {"warns above 0.5%", "warns at 10 a day", "older than 15m", "It exits 0 even with warnings",
			"replayctl ledger stats --consumer billing --window 7d", "--window"},
	} {
		stdout, stderr, code := execCommand(t, false, args, noConnections(t))
		if code != cmdutil.ExitOK {
			t.Errorf("%s: exit %d, stderr %q", args, code, stderr)
		}
		for _, want := range wants {
			if !strings.Contains(stdout, want) {
				t.Errorf("%s lacks %q", args, want)
			}
		}
	}
}

func TestLedgerImportFromOutside(t *testing.T) {
	t.Parallel()
	w := newLedgerWorld(t)
	dir := t.TempDir()
	bad := dir + "/bad.jsonl"
	good := dir + "/good.jsonl"
	if err := os.WriteFile(bad, []byte("{\"eventId\":\"a\",\"processedAt\":\"2026-01-01\"}\n{\"eventId\":\"b\",\"processedAt\":\"yesterday\"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(good, []byte("{\"eventId\":\"a\",\"processedAt\":\"2026-01-01\"}\n{\"eventId\":\"b\",\"processedAt\":\"2026-01-02T10:00:00Z\"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runCommand(t, false, "ledger import --consumer billing "+bad+" "+w.flags)
	if code != cmdutil.ExitUsage || !strings.Contains(stderr, "line 2, field processedAt:") || !strings.Contains(stderr, "nothing was written") {
		t.Fatalf("a bad line: exit %d, stderr %q; want 2 naming line 2's processedAt and nothing written", code, stderr)
	}
	if _, stderr, code := runCommand(t, false, "ledger import "+good+" "+w.flags); code != cmdutil.ExitUsage || !strings.Contains(stderr, "--consumer") {
		t.Errorf("no --consumer: exit %d, stderr %q; want 2 asking for it", code, stderr)
	}
	stdout, stderr, code := runCommand(t, false, "ledger import --consumer billing --json "+good+" "+w.flags)
	if code != cmdutil.ExitOK {
		t.Fatalf("import: exit %d\n%s\n%s", code, stdout, stderr)
	}
	var r struct {
		Imported        int64  `json:"imported"`
		AlreadyInLedger int64  `json:"alreadyInLedger"`
		FileDigest      string `json:"fileDigest"`
	}
	if err := json.Unmarshal([]byte(stdout), &r); err != nil || r.Imported != 2 || !strings.HasPrefix(r.FileDigest, "sha256:") {
		t.Fatalf("--json %s (%v); want 2 imported and the file's digest", stdout, err)
	}
	stdout, _, code = runCommand(t, false, "ledger import --consumer billing "+good+" "+w.flags)
	if code != cmdutil.ExitOK || !strings.Contains(stdout, "already there      2") {
		t.Errorf("a second run: exit %d\n%s\nwant both already there", code, stdout)
	}
}
