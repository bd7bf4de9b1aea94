package executor

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/replayctl/replayctl/internal/testenv/pgtest"
)

// TestStoppedByTellsALostConnectionFromABug feeds stoppedBy the two errors PostgreSQL really
// gives: a statement on a session an administrator terminated, and a constraint violation.
func TestStoppedByTellsALostConnectionFromABug(t *testing.T) {
	t.Parallel()
	db := pgtest.Pool(t, pgtest.Ledger(t))
	ctx := t.Context()

	conn, err := db.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := db.Exec(ctx, `select pg_terminate_backend($1::int)`, conn.Conn().PgConn().PID()); err != nil {
		t.Fatal(err)
	}
	_, lostErr := conn.Exec(ctx, `select 1`)
	if lostErr == nil {
		t.Fatal("a statement on a terminated session succeeded")
	}
	lost := stoppedBy("job-1", 7, fmt.Errorf("mark 7 targets of job job-1 published: %w", lostErr))
	if msg := lost.Error(); !strings.Contains(msg, "lost the ledger connection") || !strings.Contains(msg, "nothing is lost") ||
		!strings.Contains(msg, "run `replayctl execute` on its manifest again") {
		t.Errorf("a lost connection reads:\n%s\nwant it to say nothing is lost and to run execute again", msg)
	}
	if errors.Is(lost, ErrLedgerRefused) {
		t.Error("a lost connection matches ErrLedgerRefused")
	}

	_, bugErr := db.Exec(ctx, `insert into jobs (id) values (null)`)
	if _, ok := errors.AsType[*pgconn.PgError](bugErr); !ok {
		t.Fatalf("the bad insert gave %v, want a PostgreSQL error", bugErr)
	}
	bug := stoppedBy("job-1", 7, fmt.Errorf("record job job-1: %w", bugErr))
	msg := bug.Error()
	for _, want := range []string{"execute of job job-1 stopped after publishing 7 targets", "SQLSTATE 23502", "not-null constraint",
		"not a lost connection", "replayctl status job-1"} {
		if !strings.Contains(msg, want) {
			t.Errorf("a constraint violation's message lacks %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "nothing is lost") || strings.Contains(msg, "to continue") {
		t.Errorf("a constraint violation is told to the operator as harmless:\n%s", msg)
	}
	if refused, ok := errors.AsType[*LedgerRefusedError](bug); !ok || refused.SQLState != "23502" || !errors.Is(bug, ErrLedgerRefused) {
		t.Errorf("a constraint violation is %T %v, want a *LedgerRefusedError with SQLSTATE 23502", bug, bug)
	}
}
