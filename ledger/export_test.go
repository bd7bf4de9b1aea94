package ledger

import "github.com/jackc/pgx/v5"

// Tx is the session's transaction, for tests that lay out its temporary tables by hand.
func (p *PlanSession) Tx() pgx.Tx { return p.tx }
