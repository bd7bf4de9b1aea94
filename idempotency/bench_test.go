package idempotency_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/replayctl/replayctl/apikey"
	"github.com/replayctl/replayctl/idempotency"
	"github.com/replayctl/replayctl/internal/billing"
	"github.com/replayctl/replayctl/internal/testenv/pgtest"
)

// The API benchmarks (docs/benchmarks.md, "API idempotency"): one handler that makes one
// external call (an in-memory counter) and answers 201 with a small JSON body, served over
// loopback HTTP three ways:
//
//	plain       the handler alone
//	naive       behind a middleware written for the comparison: insert … on conflict do nothing,
//	            read the row on a conflict, run, then update it with the response (one call per
//	            key, as the real one)
//	middleware  behind this package's Keeper
//
// BenchmarkAPILatency sends one request at a time (p50 and p99 in ms); BenchmarkAPIThroughput
// sends from 64 concurrent clients (requests/s). Every request has a new key: the path that
// writes. Reproduce: go test ./idempotency -run '^$' -bench 'API' -benchtime 3000x -count 3
func BenchmarkAPILatency(b *testing.B) {
	for _, kind := range []string{"plain", "naive", "middleware"} {
		b.Run(kind, func(b *testing.B) { benchAPI(b, kind, 1) })
	}
}

func BenchmarkAPIThroughput(b *testing.B) {
	for _, kind := range []string{"plain", "naive", "middleware"} {
		b.Run(kind, func(b *testing.B) { benchAPI(b, kind, 64) })
	}
}

// countingHandler makes one "external call" per request and counts them per key.
type countingHandler struct {
	mu    sync.Mutex
	calls map[string]int
}

func (h *countingHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	key := r.Header.Get(idempotency.KeyHeader)
	ref, err := idempotency.Call(r.Context(), "bench.call", func(context.Context) (string, error) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.calls[key]++
		return "ref_" + key, nil
	})
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	fmt.Fprintf(w, `{"status":"charged","ref":%q,"bytes":%d}`, ref, len(body))
}

func (h *countingHandler) duplicates() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, c := range h.calls {
		if c > 1 {
			n++
		}
	}
	return n
}

func benchAPI(b *testing.B, kind string, clients int) {
	store := pgtest.Ledger(b)
	h := &countingHandler{calls: map[string]int{}}
	var handler http.Handler
	switch kind {
	case "plain":
		handler = h
	case "naive":
		handler = newNaive(b, pgtest.Pool(b, store), h)
	case "middleware":
		tokens := billing.DemoTokens()
		k, err := idempotency.New(b.Context(), idempotency.Config{Store: store, KeySecret: billing.DemoKeySecret(),
			Keyring: billing.DemoKeyring(), Scope: tokens.Scope, Authorize: tokens.Authorize,
			Routes: []idempotency.Route{{Method: "POST", Template: "/v1/charges", RequireKey: true,
				Retention: apikey.Delays{ClientRetry: 24 * time.Hour}}}})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = k.Close(context.Background()) })
		handler = k.Handler("POST", "/v1/charges", h)
	}
	srv := httptest.NewServer(handler)
	b.Cleanup(srv.Close)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients}}
	body := []byte(`{"orderId":"ord-1","customer":"c","amountCents":1250,"currency":"EUR"}`)
	run := fmt.Sprintf("%s-%d-%d", kind, clients, time.Now().UnixNano())
	var seq atomic.Int64
	lat := make([][]time.Duration, clients)
	var wg sync.WaitGroup
	b.ResetTimer()
	began := time.Now()
	for c := range clients {
		wg.Go(func() {
			for {
				i := seq.Add(1)
				if i > int64(b.N) {
					return
				}
				req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/charges", bytes.NewReader(body))
				req.Header.Set("Authorization", "Bearer demo-alice")
				req.Header.Set(idempotency.KeyHeader, run+"-"+strconv.FormatInt(i, 10))
				t0 := time.Now()
				resp, err := client.Do(req)
				if err != nil {
					b.Error(err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				lat[c] = append(lat[c], time.Since(t0))
				if resp.StatusCode != http.StatusCreated {
					b.Errorf("status %d", resp.StatusCode)
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(began)
	b.StopTimer()
	if d := h.duplicates(); d != 0 {
		b.Fatalf("%d keys made more than one call", d)
	}
	all := slices.Concat(lat...)
	slices.Sort(all)
	if len(all) == 0 {
		return
	}
	b.ReportMetric(float64(all[len(all)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(all[len(all)*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(len(all))/elapsed.Seconds(), "req/s")
	if kind == "middleware" {
		st := store.APIBatchStats()
		b.ReportMetric(float64(st.ClaimRows+st.WriteRows)/float64(max(1, st.ClaimStatements+st.WriteStatements)), "rows/stmt")
		if testing.Verbose() {
			b.Logf("claims %d rows in %d batches (%v each), marks and completions %d in %d (%v)",
				st.ClaimRows, st.ClaimStatements, st.ClaimTime/time.Duration(max(1, st.ClaimStatements)),
				st.WriteRows, st.WriteStatements, st.WriteTime/time.Duration(max(1, st.WriteStatements)))
		}
	}
}

// naive is the comparison middleware: the usual hand-written Idempotency-Key table.
type naive struct {
	pool *pgxpool.Pool
	next http.Handler
}

func newNaive(b *testing.B, pool *pgxpool.Pool, next http.Handler) *naive {
	_, err := pool.Exec(b.Context(), `create table naive_keys (
	    key text primary key, request_hash text not null, state text not null,
	    status integer, body bytea, created_at timestamptz not null default now())`)
	if err != nil {
		b.Fatal(err)
	}
	return &naive{pool: pool, next: next}
}

func (n *naive) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	key := r.Header.Get(idempotency.KeyHeader)
	hash := apikey.HashKey([]byte("naive"), string(body))
	tag, err := n.pool.Exec(ctx, `insert into naive_keys (key, request_hash, state) values ($1, $2, 'processing') on conflict do nothing`, key, hash)
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	if tag.RowsAffected() == 0 {
		var state, stored string
		var status *int
		var respBody []byte
		err := n.pool.QueryRow(ctx, `select state, request_hash, status, body from naive_keys where key = $1`, key).Scan(&state, &stored, &status, &respBody)
		switch {
		case errors.Is(err, pgx.ErrNoRows), err != nil:
			http.Error(w, "retry", http.StatusConflict)
		case stored != hash:
			http.Error(w, "key reused", http.StatusUnprocessableEntity)
		case state != "completed":
			http.Error(w, "in progress", http.StatusConflict)
		default:
			w.WriteHeader(*status)
			_, _ = w.Write(respBody)
		}
		return
	}
	rec := httptest.NewRecorder()
	n.next.ServeHTTP(rec, r)
	out, _ := json.Marshal(rec.Body.String())
	if _, err := n.pool.Exec(ctx, `update naive_keys set state = 'completed', status = $2, body = $3 where key = $1`, key, rec.Code, out); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.WriteHeader(rec.Code)
	_, _ = w.Write(rec.Body.Bytes())
}
