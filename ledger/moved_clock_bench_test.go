package ledger_test

import (
	"testing"
	"time"

	"github.com/replayctl/replayctl/apikey"
	"github.com/replayctl/replayctl/internal/testenv/benchenv"
	"github.com/replayctl/replayctl/internal/testenv/pgtest"
	"github.com/replayctl/replayctl/ledger"
)

// BenchmarkMonthsOfTrafficWithAMovedClock simulates days of a consumer's traffic against its
// declared windows: each simulated day settles a day's events (rows dated on that day, evidence for
// the evidence window after it), then runs the nightly prune as of the end of that day, then a
// vacuum (what autovacuum does over a real day). The ledger's bytes must stop growing once the
// windows have passed (evidence window + compaction age + tombstone retention), and prune's time
// per day must not grow with the days behind it.
//
//	go test -run '^$' -bench MonthsOfTrafficWithAMovedClock -benchtime 1x -timeout 60m ./ledger
//
// REPLAYCTL_BENCH_DAYS (150) and REPLAYCTL_BENCH_ROWS_PER_DAY (20,000) size it; the windows are
// 30 days of evidence, 7 before a tombstone is compacted, 60 of tombstone retention.
func BenchmarkMonthsOfTrafficWithAMovedClock(b *testing.B) {
	days, perDay := benchenv.Int(b, "REPLAYCTL_BENCH_DAYS", 150), benchenv.Int(b, "REPLAYCTL_BENCH_ROWS_PER_DAY", 20_000)
	const evidenceDays, tombstoneDays = 30, 60
	for range b.N {
		b.StopTimer()
		store := pgtest.Ledger(b)
		ctx := b.Context()
		if err := store.RetentionPoliciesRegister(ctx, []apikey.Policy{{Kind: apikey.PolicyConsumer, Name: "billing",
			ReplayWindow: 24 * time.Hour, EvidenceWindow: evidenceDays * 24 * time.Hour, TombstoneWindow: tombstoneDays * 24 * time.Hour,
			RegisteredBy: "bench"}}); err != nil {
			b.Fatal(err)
		}
		var now time.Time
		if err := pgtest.Pool(b, store).QueryRow(ctx, `select now()`).Scan(&now); err != nil {
			b.Fatal(err)
		}
		start := now.Add(-time.Duration(days) * 24 * time.Hour)
		var slowest, total time.Duration
		var bytesAt []int64
		for d := range days {
			day := start.Add(time.Duration(d) * 24 * time.Hour)
			mustExec(b, store, `insert into effects (consumer, event_id, effect_version, state, request_hash, request_hash_alg, result_hash,
				effect_count, replay_until, evidence_until, created_at, updated_at, completed_by)
				select 'billing', 'd' || $1::int || '-' || i, 1, 'completed', 'sha256:' || md5($1::int || '-' || i), 'canonical-json-v1', 'sha256:r', 1,
				       $2::timestamptz + interval '1 day', $2::timestamptz + $4::int * interval '1 day' + (i % 86400) * interval '1 second',
				       $2::timestamptz, $2::timestamptz, 'bench'
				  from generate_series(1, $3::int) i`, d, day, perDay, evidenceDays)
			b.StartTimer()
			t0 := time.Now()
			if _, err := store.Prune(ctx, ledger.PruneOptions{Consumer: "billing", Actor: "bench", AsOf: day.Add(24 * time.Hour),
				CompactAfter: ledger.SuggestedCompactAfter}); err != nil {
				b.Fatal(err)
			}
			took := time.Since(t0)
			b.StopTimer()
			total += took
			slowest = max(slowest, took)
			mustExec(b, store, `vacuum effects`)
			mustExec(b, store, `vacuum effect_tombstones`)
			var bytes int64
			if err := pgtest.Pool(b, store).QueryRow(ctx, `select pg_total_relation_size('effects') + pg_total_relation_size('effect_tombstones')`).Scan(&bytes); err != nil {
				b.Fatal(err)
			}
			bytesAt = append(bytesAt, bytes)
			if d%10 == 9 || d == days-1 {
				var rows, tombstones, compact int64
				if err := pgtest.Pool(b, store).QueryRow(ctx, `select count(*) filter (where state <> 'expired'), count(*) filter (where state = 'expired'),
					(select count(*) from effect_tombstones) from effects`).Scan(&rows, &tombstones, &compact); err != nil {
					b.Fatal(err)
				}
				b.Logf("day %3d: %6.1f MB (effects %d live rows, %d whole tombstones; %d compact tombstones), prune %v",
					d+1, float64(bytes)/1e6, rows, tombstones, compact, took.Round(time.Millisecond))
			}
		}
		b.ReportMetric(float64(bytesAt[len(bytesAt)-1])/1e6, "MB-at-end")
		b.ReportMetric(float64(slowest.Milliseconds()), "ms-slowest-prune")
		b.ReportMetric(float64(total.Milliseconds())/float64(days), "ms/day-prune")
	}
}
