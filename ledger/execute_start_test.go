package ledger_test

import (
	"errors"
	"testing"
	"time"

	"github.com/replayctl/replayctl/internal/testenv/pgtest"
	"github.com/replayctl/replayctl/jobtype"
	"github.com/replayctl/replayctl/ledger"
)

func executeStart(jobID string) ledger.ExecuteStart {
	return ledger.ExecuteStart{JobID: jobID, Consumer: "billing",
		Transition: ledger.JobTransition{ID: jobID, From: []jobtype.Status{jobtype.Shadowed}, To: jobtype.Executing, Reason: "started by alice", By: "alice"},
		Actor:      "alice", EffectVersion: 2, HashAlgorithm: execAlg,
		Audit: ledger.AuditEntry{At: time.Now().UTC(), Actor: "alice", JobID: jobID, Action: "execute.started"}}
}

// Each refusal of ExecuteStart leaves the job, the version and the audit log as they were: the
// transaction is the whole start or nothing.
func TestExecuteStartIsAllOrNothing(t *testing.T) {
	t.Parallel()
	store := pgtest.Ledger(t)
	ctx := t.Context()
	execTargets(t, store, "job-a", "e0", "e1")
	execTargets(t, store, "job-b", "e2")
	execSQL(t, store, `update jobs set status = 'shadowed'`)
	unchanged := func(what string) {
		t.Helper()
		if n := queryInt(t, store, `select count(*) from jobs where status = 'shadowed'`); n != 2 {
			t.Errorf("%s: %d of 2 jobs still shadowed", what, n)
		}
		if n := queryInt(t, store, `select count(*) from audit`); n != 0 {
			t.Errorf("%s: %d audit entries, want none", what, n)
		}
	}

	st := executeStart("job-a")
	st.Transition.From = []jobtype.Status{jobtype.Paused}
	if err := store.ExecuteStart(ctx, st); !errors.Is(err, ledger.ErrJobStatus) {
		t.Fatalf("from a status the job is not in: %v, want ErrJobStatus", err)
	}
	unchanged("status moved")

	if err := ledger.EffectVersionsRegister(ctx, store.Pool(), "billing", 2, ledger.EffectVersionExecuting, "job-b", "bob"); err != nil {
		t.Fatal(err)
	}
	if err := store.ExecuteStart(ctx, executeStart("job-a")); !errors.Is(err, ledger.ErrVersionTaken) || !errors.Is(err, ledger.ErrConflict) {
		t.Fatalf("a version registered by another job: %v, want ErrVersionTaken", err)
	}
	unchanged("version taken")

	execSQL(t, store, `update jobs set status = 'paused' where id = 'job-b'`)
	err := store.ExecuteStart(ctx, executeStart("job-a"))
	busy, ok := errors.AsType[*ledger.ConsumerBusyError](err)
	if !ok || !errors.Is(err, ledger.ErrConsumerBusy) || busy.Other.ID != "job-b" || busy.Other.Status != jobtype.Paused {
		t.Fatalf("another job of the consumer paused: %v, want a *ConsumerBusyError naming job-b", err)
	}
	execSQL(t, store, `update jobs set status = 'shadowed' where id = 'job-b'`)
	unchanged("consumer busy")

	execSQL(t, store, `delete from effect_versions`)
	if err := store.ExecuteStart(ctx, executeStart("job-a")); err != nil {
		t.Fatal(err)
	}
	if n := queryInt(t, store, `select count(*) from jobs where id = 'job-a' and status = 'executing' and status_by = 'alice'`); n != 1 {
		t.Error("job-a is not executing after its start")
	}
	if n := queryInt(t, store, `select count(*) from effect_versions where job_id = 'job-a' and effect_version = 2 and state = 'executing'`); n != 1 {
		t.Error("version 2 is not registered as executing for job-a")
	}
	if n := queryInt(t, store, `select count(*) from audit where job_id = 'job-a' and action = 'execute.started'`); n != 1 {
		t.Error("no execute.started audit entry")
	}
}
