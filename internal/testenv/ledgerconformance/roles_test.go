package ledgerconformance_test

import (
	"testing"

	"github.com/replayctl/replayctl/internal/testenv/ledgerconformance"
	"github.com/replayctl/replayctl/internal/testenv/ledgerfake"
	"github.com/replayctl/replayctl/internal/testenv/pgtest"
	"github.com/replayctl/replayctl/job"
	"github.com/replayctl/replayctl/ledger/ledgertest"
)

func TestPolicySetterOnPostgreSQL(t *testing.T) {
	t.Parallel()
	ledgerconformance.PolicySetter(t, func(t *testing.T) job.PolicySetter { return pgtest.Ledger(t) })
}

func TestPolicySetterFake(t *testing.T) {
	t.Parallel()
	ledgerconformance.PolicySetter(t, func(*testing.T) job.PolicySetter { return ledgerfake.NewPolicies() })
}

func TestDeciderOnPostgreSQL(t *testing.T) {
	t.Parallel()
	ledgerconformance.Decider(t, func(t *testing.T) (job.Decider, ledgerconformance.Seeder) {
		store := pgtest.Ledger(t)
		return store, pgSeeder{t: t, db: pgtest.Pool(t, store)}
	})
}

func TestDeciderFake(t *testing.T) {
	t.Parallel()
	ledgerconformance.Decider(t, func(*testing.T) (job.Decider, ledgerconformance.Seeder) {
		fake := ledgerfake.NewDecisions()
		return fake, fake
	})
}

// pgSeeder seeds PostgreSQL through the row factory.
type pgSeeder struct {
	t  *testing.T
	db ledgertest.Querier
}

func (s pgSeeder) AddJob(j ledgertest.Job) { ledgertest.InsertJob(s.t, s.db, j) }

func (s pgSeeder) AddVerdict(jobID, digest string, pass bool) int64 {
	return ledgertest.InsertShadowVerdict(s.t, s.db, jobID, digest, pass)
}
