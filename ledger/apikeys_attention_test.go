package ledger_test

import (
	"testing"

	"github.com/replayctl/replayctl/internal/testenv/pgtest"
)

// Past a hundred thousand records keys stats no longer counts them (a count reads the table): each
// route's records are estimated from the statistics, and what needs a person (uncertain records,
// lapsed leases) is still counted exactly, from the partial index of records awaiting an outcome.
func TestAPIKeysAttentionEstimatesRecordsOfALargeTableAndCountsUncertainExactly(t *testing.T) {
	t.Parallel()
	store := pgtest.Ledger(t)
	execSQL(t, store, `
insert into api_keys (scope_hash, key_hash, route, client_hash, request_hash, request_hash_alg, state, evidence_until)
select 's' || i, 'k' || i, case when i % 5 = 0 then 'POST /v1/refunds' else 'POST /v1/charges' end, 'c', 'sha256:x', 'canonical-json-v1',
       case when i in (5, 10, 15) then 'uncertain' else 'completed' end, now() + interval '1 day'
  from generate_series(1, 150000) i`)
	execSQL(t, store, `analyze api_keys`)
	got, err := store.APIKeysAttention(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct{ records, uncertain int64 }{"POST /v1/charges": {120000, 0}, "POST /v1/refunds": {30000, 3}}
	if len(got) != 2 {
		t.Fatalf("attention %+v, want the two routes", got)
	}
	for _, a := range got {
		w := want[a.Route]
		if !a.RecordsEstimated || a.Records < w.records*9/10 || a.Records > w.records*11/10 || a.Uncertain != w.uncertain {
			t.Errorf("%s: %+v, want about %d records (estimated) and exactly %d uncertain", a.Route, a, w.records, w.uncertain)
		}
	}
	one, err := store.APIKeysAttention(t.Context(), "POST /v1/refunds")
	if err != nil || len(one) != 1 || one[0].Uncertain != 3 {
		t.Fatalf("attention of one route: %+v, %v", one, err)
	}
}
