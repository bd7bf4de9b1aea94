package ledger_test

import (
	"errors"
	"testing"

	"github.com/replayctl/replayctl/internal/testenv/pgtest"
	"github.com/replayctl/replayctl/jobtype"
	"github.com/replayctl/replayctl/ledger"
)

func TestEffectVersionsRegisterRefusesAReusedVersion(t *testing.T) {
	t.Parallel()
	store := pgtest.Ledger(t)
	ctx := t.Context()
	if err := ledger.EffectVersionsRegister(ctx, store.Pool(), "billing", 2, ledger.EffectVersionExecuting, "job-1", "alice"); err != nil {
		t.Fatal(err)
	}
	err := ledger.EffectVersionsRegister(ctx, store.Pool(), "billing", 2, ledger.EffectVersionExecuting, "job-2", "bob")
	if !errors.Is(err, ledger.ErrConflict) {
		t.Fatalf("second registration of version 2: %v, want ErrConflict", err)
	}
	if err := ledger.EffectVersionsRegister(ctx, store.Pool(), "refunds", 2, ledger.EffectVersionLive, "", "alice"); err != nil {
		t.Fatalf("another consumer's version 2: %v", err)
	}
	if n := queryInt(t, store, `select count(*) from effect_versions where job_id is null`); n != 1 {
		t.Fatalf("%d versions without a job, want the live one", n)
	}
}

func TestEffectVersionsIsExecutingOnlyForItsJob(t *testing.T) {
	t.Parallel()
	store := pgtest.Ledger(t)
	ctx := t.Context()
	for _, r := range []struct {
		version int
		state   string
	}{{2, ledger.EffectVersionExecuting}, {3, ledger.EffectVersionCompleted}} {
		if err := ledger.EffectVersionsRegister(ctx, store.Pool(), "billing", r.version, r.state, "job-1", "alice"); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		consumer string
		version  int
		job      string
		want     bool
	}{
		{"billing", 2, "job-1", true},
		{"billing", 2, "job-9", false},
		{"billing", 3, "job-1", false},
		{"billing", 4, "job-1", false},
		{"refunds", 2, "job-1", false},
	}
	for _, tt := range tests {
		got, err := ledger.EffectVersionsIsExecuting(ctx, store.Pool(), tt.consumer, tt.version, tt.job)
		if err != nil {
			t.Fatal(err)
		}
		if got.Executing != tt.want || got.SourceKind != jobtype.SourceDLQ {
			t.Errorf("%s version %d job %s: executing %v, want %v", tt.consumer, tt.version, tt.job, got, tt.want)
		}
	}
}
