package ledger_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/replayctl/replayctl/internal/testenv/pgtest"
	"github.com/replayctl/replayctl/ledger"
)

// killIdleSession terminates the one connection idle in worker's pool, from admin, and waits until
// it is gone: worker's next statement is sent on a dead socket, as after an administrator's
// pg_terminate_backend or a server restart.
func killIdleSession(t *testing.T, admin, worker *ledger.Store) {
	t.Helper()
	if n := worker.Pool().Stat().TotalConns(); n != 1 {
		t.Fatalf("the worker pool holds %d connections, want 1 so the dead one is the one it hands out", n)
	}
	conn, err := worker.Pool().Acquire(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	pid := conn.Conn().PgConn().PID()
	conn.Release()
	if queryInt(t, admin, `select pg_terminate_backend($1::int)::int`, pid) != 1 {
		t.Fatalf("could not terminate backend %d", pid)
	}
	pgtest.WaitFor(t, 5*time.Second, func() (bool, error) {
		return queryInt(t, admin, `select count(*) from pg_stat_activity where pid = $1`, pid) == 0, nil
	})
}

func completion(owner, hash string) ledger.EffectCompletion {
	return ledger.EffectCompletion{Key: effectKey, Owner: owner, ResultHash: hash, ResultBody: json.RawMessage(`{"ok":true}`),
		EffectCount: 1, ResultRetention: time.Hour, EvidenceRetention: time.Hour}
}

func TestEffectsCompleteIsSentAgainAfterItsSessionWasKilled(t *testing.T) {
	t.Parallel()
	admin, url := pgtest.LedgerWithURL(t)
	worker := openStore(t, url)
	claim(t, admin, claimFor("a", "sha256:1"))

	killIdleSession(t, admin, worker)
	ok, err := ledger.EffectsComplete(t.Context(), worker.Pool(), completion("a", "sha256:r"))
	if err != nil || !ok {
		t.Fatalf("complete after a killed session: recorded %v, %v; want it sent again and recorded", ok, err)
	}
	if r := effectRow(t, admin); r.State != "completed" || r.ResultHash != "sha256:r" {
		t.Fatalf("row %s %s, want completed with the handler's result", r.State, r.ResultHash)
	}
}

// A completion applied before its answer was lost: the attempt sent again matches no processing
// row, and must not be reported as a lost lease (the consumer would mark an effect made once and
// recorded as uncertain).
func TestEffectsCompleteAppliedBeforeItsAnswerWasLostCountsAsRecorded(t *testing.T) {
	t.Parallel()
	admin, url := pgtest.LedgerWithURL(t)
	worker := openStore(t, url)
	claim(t, admin, claimFor("a", "sha256:1"))
	if ok, err := ledger.EffectsComplete(t.Context(), admin.Pool(), completion("a", "sha256:r")); err != nil || !ok {
		t.Fatalf("first completion: %v, %v", ok, err)
	}

	killIdleSession(t, admin, worker)
	if ok, err := ledger.EffectsComplete(t.Context(), worker.Pool(), completion("a", "sha256:r")); err != nil || !ok {
		t.Fatalf("the same completion sent again after a lost answer: %v, %v; want recorded", ok, err)
	}
	// Another outcome in the row is not ours, lost answer or not.
	killIdleSession(t, admin, worker)
	if ok, err := ledger.EffectsComplete(t.Context(), worker.Pool(), completion("a", "sha256:other")); err != nil || ok {
		t.Fatalf("a completion whose result the row does not hold: %v, %v; want not recorded", ok, err)
	}
}

func TestEffectsMarkUncertainAppliedBeforeItsAnswerWasLostCountsAsMarked(t *testing.T) {
	t.Parallel()
	admin, url := pgtest.LedgerWithURL(t)
	worker := openStore(t, url)
	claim(t, admin, claimFor("a", "sha256:1"))
	u := ledger.EffectUncertainty{Key: effectKey, Owner: "a", EffectCount: 1, LastError: "timeout after the charge was sent"}
	if ok, err := ledger.EffectsMarkUncertain(t.Context(), admin.Pool(), u); err != nil || !ok {
		t.Fatalf("first mark: %v, %v", ok, err)
	}

	killIdleSession(t, admin, worker)
	if ok, err := ledger.EffectsMarkUncertain(t.Context(), worker.Pool(), u); err != nil || !ok {
		t.Fatalf("the same mark sent again after a lost answer: %v, %v; want marked", ok, err)
	}
	u.Owner = "b"
	killIdleSession(t, admin, worker)
	if ok, err := ledger.EffectsMarkUncertain(t.Context(), worker.Pool(), u); err != nil || ok {
		t.Fatalf("another owner's mark: %v, %v; want not marked", ok, err)
	}
}

func TestJobTargetsMarkPublishedIsSentAgainAfterItsSessionWasKilled(t *testing.T) {
	t.Parallel()
	admin, url := pgtest.LedgerWithURL(t)
	worker := openStore(t, url)
	execTargets(t, admin, "job-retry", "e0", "e1", "e2")

	killIdleSession(t, admin, worker)
	if _, err := worker.JobTargetsMarkPublished(t.Context(), "job-retry", []string{"e0", "e1", "e2"}, time.Now()); err != nil {
		t.Fatalf("mark published after a killed session: %v; want it sent again", err)
	}
	if n := queryInt(t, admin, `select count(*) from job_targets where job_id = 'job-retry' and status = 'published'`); n != 3 {
		t.Fatalf("%d of 3 targets published", n)
	}
}

func TestConnectionLost(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		err  error
		want bool
	}{
		{&pgconn.PgError{Code: "57P01"}, true}, // admin_shutdown: pg_terminate_backend
		{&pgconn.PgError{Code: "08006"}, true}, // connection_failure
		{fmt.Errorf("write failed: %w", io.ErrUnexpectedEOF), true},
		{&pgconn.PgError{Code: "23505"}, false}, // unique_violation: the server's answer
		{&pgconn.PgError{Code: "57014"}, false}, // query_canceled (statement_timeout): sending it again would time out again
		{context.DeadlineExceeded, false},
		{context.Canceled, false},
		{errors.New("cannot encode"), false},
		{nil, false},
	} {
		if got := ledger.ConnectionLost(c.err); got != c.want {
			t.Errorf("ConnectionLost(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

// Refused is the other side of ConnectionLost: the server's answer to the statement, with its
// SQLSTATE; a lost connection is never a refusal, even when the server named it.
func TestRefused(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		err  error
		code string
		want bool
	}{
		{fmt.Errorf("record job: %w", &pgconn.PgError{Code: "23502"}), "23502", true}, // not_null_violation
		{&pgconn.PgError{Code: "42703"}, "42703", true},                               // undefined_column
		{&pgconn.PgError{Code: "57P01"}, "", false},                                   // admin_shutdown
		{&pgconn.PgError{Code: "08006"}, "", false},                                   // connection_failure
		{fmt.Errorf("write failed: %w", io.ErrUnexpectedEOF), "", false},
		{errors.New("nats: timeout"), "", false},
		{nil, "", false},
	} {
		if code, ok := ledger.Refused(c.err); code != c.code || ok != c.want {
			t.Errorf("Refused(%v) = %q, %v, want %q, %v", c.err, code, ok, c.code, c.want)
		}
	}
}

// The SDK starts call n of a handling; the statement is sent again after a lost answer and calls
// may start concurrently: calls_started is the highest call begun, never a count of statements.
func TestEffectsCallStartedIsIdempotentAndSentAgainAfterItsSessionWasKilled(t *testing.T) {
	t.Parallel()
	admin, url := pgtest.LedgerWithURL(t)
	worker := openStore(t, url)
	hit := hitFor(t)
	claim(t, admin, claimFor("a", "sha256:1"))
	hit(ledger.EffectsCallStarted(t.Context(), admin.Pool(), effectKey, "a", 2))
	hit(ledger.EffectsCallStarted(t.Context(), admin.Pool(), effectKey, "a", 1))
	hit(ledger.EffectsCallStarted(t.Context(), admin.Pool(), effectKey, "a", 2))
	if r := effectRow(t, admin); r.CallsStarted != 2 {
		t.Fatalf("calls_started %d after calls 2, 1 and 2 again; want 2", r.CallsStarted)
	}

	killIdleSession(t, admin, worker)
	if ok, err := ledger.EffectsCallStarted(t.Context(), worker.Pool(), effectKey, "a", 3); err != nil || !ok {
		t.Fatalf("call started after a killed session: %v, %v; want it sent again", ok, err)
	}
	if r := effectRow(t, admin); r.CallsStarted != 3 {
		t.Fatalf("calls_started %d, want 3", r.CallsStarted)
	}
}
