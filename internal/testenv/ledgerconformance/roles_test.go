package ledgerconformance_test

import (
	"testing"
	"time"

	"github.com/replayctl/replayctl/apikey"
	"github.com/replayctl/replayctl/consumer"

	"github.com/replayctl/replayctl/internal/testenv/ledgerconformance"
	"github.com/replayctl/replayctl/internal/testenv/ledgerfake"
	"github.com/replayctl/replayctl/internal/testenv/pgtest"
	"github.com/replayctl/replayctl/job"
	"github.com/replayctl/replayctl/keys"
	"github.com/replayctl/replayctl/ledger"
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

func TestUncertainOnPostgreSQL(t *testing.T) {
	t.Parallel()
	ledgerconformance.Uncertain(t, func(t *testing.T) (ledgerconformance.UncertainStore, ledgerconformance.UncertainSeeder) {
		store := pgtest.Ledger(t)
		return store, pgSeeder{t: t, db: pgtest.Pool(t, store)}
	})
}

func TestUncertainFake(t *testing.T) {
	t.Parallel()
	ledgerconformance.Uncertain(t, func(*testing.T) (ledgerconformance.UncertainStore, ledgerconformance.UncertainSeeder) {
		fake := ledgerfake.NewEffects()
		return fake, fake
	})
}

func (s pgSeeder) AddEffects(effects ...ledgertest.Effect) {
	ledgertest.InsertEffects(s.t, s.db, effects...)
}

func (s pgSeeder) AddTargets(jobID, status string, eventIDs ...string) {
	ledgertest.InsertTargets(s.t, s.db, jobID, status, eventIDs...)
}

func (s pgSeeder) StickLeases(owner string, calls int, lapsedAgo time.Duration, eventIDs ...string) {
	ledgertest.StickLeases(s.t, s.db, owner, calls, lapsedAgo, eventIDs...)
}

func (s pgSeeder) AskedAgo(d time.Duration, eventIDs ...string) {
	ledgertest.AskedAgo(s.t, s.db, d, eventIDs...)
}

func (s pgSeeder) SettleByHand(eventIDs ...string) { ledgertest.SettleByHand(s.t, s.db, eventIDs...) }

func (s pgSeeder) TargetStatuses(jobID string) map[string]string {
	return ledgertest.TargetStatuses(s.t, s.db, jobID)
}

func (s pgSeeder) AuditActions() []string { return ledgertest.AuditActions(s.t, s.db) }

func TestAPIRecordsOnPostgreSQL(t *testing.T) {
	t.Parallel()
	ledgerconformance.APIRecords(t, func(t *testing.T) (keys.Records, ledgerconformance.APIRecordsSeeder, func([]apikey.Policy) error) {
		store := pgtest.Ledger(t)
		return store, pgSeeder{t: t, db: pgtest.Pool(t, store)}, func(ps []apikey.Policy) error {
			return store.RetentionPoliciesRegister(t.Context(), ps)
		}
	})
}

func TestAPIRecordsFake(t *testing.T) {
	t.Parallel()
	ledgerconformance.APIRecords(t, func(t *testing.T) (keys.Records, ledgerconformance.APIRecordsSeeder, func([]apikey.Policy) error) {
		fake := ledgerfake.NewAPIRecords()
		return fake, fake, func(ps []apikey.Policy) error { return fake.RetentionPoliciesRegister(t.Context(), ps) }
	})
}

func (s pgSeeder) AddAPIKeys(records ...ledgertest.APIKey) {
	ledgertest.InsertAPIKeys(s.t, s.db, records...)
}

func TestAPILeasesOnPostgreSQL(t *testing.T) {
	t.Parallel()
	ledgerconformance.APILeases(t, func(t *testing.T) (ledgerconformance.APIStore, ledgerconformance.APIRecordsSeeder) {
		store := pgtest.Ledger(t)
		return store, pgSeeder{t: t, db: pgtest.Pool(t, store)}
	})
}

func TestAPILeasesFake(t *testing.T) {
	t.Parallel()
	ledgerconformance.APILeases(t, func(*testing.T) (ledgerconformance.APIStore, ledgerconformance.APIRecordsSeeder) {
		fake := ledgerfake.NewAPIRecords()
		return fake, fake
	})
}

func TestConsumerOnPostgreSQL(t *testing.T) {
	t.Parallel()
	ledgerconformance.Consumer(t, func(t *testing.T) (consumer.Ledger, ledgerconformance.ConsumerSeeder) {
		store := pgtest.Ledger(t)
		return store, pgSeeder{t: t, db: pgtest.Pool(t, store)}
	})
}

func TestConsumerFake(t *testing.T) {
	t.Parallel()
	ledgerconformance.Consumer(t, func(*testing.T) (consumer.Ledger, ledgerconformance.ConsumerSeeder) {
		fake := ledgerfake.NewEffects()
		return fake, fake
	})
}

func (s pgSeeder) LapseLeases(eventIDs ...string) { ledgertest.LapseLeases(s.t, s.db, eventIDs...) }
func (s pgSeeder) MakeTombstones(eventIDs ...string) {
	ledgertest.MakeTombstones(s.t, s.db, eventIDs...)
}
func (s pgSeeder) ForbidWrites(eventIDs ...string) { ledgertest.ForbidWrites(s.t, s.db, eventIDs...) }

func (s pgSeeder) RegisterEffectVersion(consumer string, version int, state, jobID string) {
	pool, ok := s.db.(ledger.Querier)
	if !ok {
		s.t.Fatalf("the seeder's %T cannot register an effect version", s.db)
	}
	if err := ledger.EffectVersionsRegister(s.t.Context(), pool, consumer, version, state, jobID, "ledgerconformance"); err != nil {
		s.t.Fatal(err)
	}
}
