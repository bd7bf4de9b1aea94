package ledger_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/replayctl/replayctl/internal/testenv/pgtest"
	"github.com/replayctl/replayctl/ledger"
)

// BenchmarkPruneOfExpiredBodyWeeks dates weeks of result bodies back (the clock moved: their
// replay windows have passed), then times the prune that drops them, against the same bodies
// cleared the old way (effects.result_body set to NULL row by row). Dropping a week is a
// partition drop: its time must stay flat as the week grows.
//
//	go test -run '^$' -bench PruneOfExpiredBodyWeeks -benchtime 1x ./ledger
func BenchmarkPruneOfExpiredBodyWeeks(b *testing.B) {
	for _, perWeek := range []int{10_000, 100_000, 1_000_000} {
		b.Run(fmt.Sprintf("bodies-per-week=%d", perWeek), func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				store := pgtest.Ledger(b)
				ctx := b.Context()
				const weeks = 4
				monday := time.Now().UTC().Truncate(24 * time.Hour)
				for monday.Weekday() != time.Monday {
					monday = monday.AddDate(0, 0, -1)
				}
				for w := 1; w <= weeks; w++ {
					start := monday.AddDate(0, 0, -7*w)
					name := "effect_bodies_w" + start.Format("20060102")
					mustExec(b, store, `create table `+name+` partition of effect_bodies for values from ('`+start.Format(time.RFC3339)+
						`') to ('`+start.AddDate(0, 0, 7).Format(time.RFC3339)+`')`)
					mustExec(b, store, `insert into effect_bodies select 'billing', 'w`+fmt.Sprint(w)+`-' || i, 1, $1::timestamptz + (i % 600000) * interval '1 second',
						'{"status":"charged","chargeId":"ch_0123456789","amountCents":12345}' from generate_series(1, $2) i`, start, perWeek)
				}
				mustExec(b, store, `vacuum analyze effect_bodies`)
				b.StartTimer()
				t0 := time.Now()
				if _, err := store.Prune(ctx, ledger.PruneOptions{AllConsumers: true, Actor: "bench"}); err != nil {
					b.Fatal(err)
				}
				dropped := time.Since(t0)
				b.StopTimer()
				// The same bodies the old way: in effects rows, cleared by the row-by-row step.
				mustExec(b, store, `insert into effects (consumer, event_id, effect_version, state, request_hash, result_hash, result_body, replay_until, evidence_until)
					select 'legacy', 'l-' || i, 1, 'completed', 'sha256:x', 'sha256:r', '{"status":"charged","chargeId":"ch_0123456789","amountCents":12345}',
					       now() - interval '8 days', now() + interval '300 days' from generate_series(1, $1) i`, perWeek)
				mustExec(b, store, `vacuum analyze effects`)
				b.StartTimer()
				t1 := time.Now()
				if _, err := store.Prune(ctx, ledger.PruneOptions{Consumer: "legacy", Actor: "bench", BatchSize: ledger.DefaultPruneBatchSize}); err != nil {
					b.Fatal(err)
				}
				rowByRow := time.Since(t1)
				b.ReportMetric(dropped.Seconds()*1000/weeks, "ms/week-dropped")
				b.ReportMetric(rowByRow.Seconds()*1000, "ms/week-row-by-row")
			}
		})
	}
}

func mustExec(b *testing.B, store *ledger.Store, sql string, args ...any) {
	b.Helper()
	if _, err := pgtest.Pool(b, store).Exec(b.Context(), sql, args...); err != nil {
		b.Fatalf("%s: %v", sql, err)
	}
}
