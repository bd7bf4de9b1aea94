package ledgerconformance_test

import (
	"testing"

	"github.com/replayctl/replayctl/internal/testenv/ledgerconformance"
	"github.com/replayctl/replayctl/internal/testenv/ledgerfake"
	"github.com/replayctl/replayctl/internal/testenv/pgtest"
	"github.com/replayctl/replayctl/job"
)

func TestPolicySetterOnPostgreSQL(t *testing.T) {
	t.Parallel()
	ledgerconformance.PolicySetter(t, func(t *testing.T) job.PolicySetter { return pgtest.Ledger(t) })
}

func TestPolicySetterFake(t *testing.T) {
	t.Parallel()
	ledgerconformance.PolicySetter(t, func(*testing.T) job.PolicySetter { return ledgerfake.NewPolicies() })
}
