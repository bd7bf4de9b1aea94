package ledger

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/replayctl/replayctl/apikey"
)

// apiClaimed is one claim's answer: whether it won the lease, and the record after it.
type apiClaimed struct {
	claimed bool
	rec     apikey.Record
	found   bool
}

func newAPIClaims(pool *pgxpool.Pool) *apiBatch[apikey.Claim, apiClaimed] {
	return &apiBatch[apikey.Claim, apiClaimed]{
		pool: pool,
		key:  func(c apikey.Claim) apiOwned { return apiOwned{c.ScopeHash, c.KeyHash, c.Owner} },
		send: func(ctx context.Context, conn batchSender, rows []apikey.Claim) (map[apiOwned]apiClaimed, error) {
			out := make(map[apiOwned]apiClaimed, len(rows))
			b := claimWithoutFlush()
			for _, c := range rows {
				o := apiOwned{c.ScopeHash, c.KeyHash, c.Owner}
				queueClaim(b, c, func(got apiClaimed) { out[o] = got })
			}
			if err := conn.SendBatch(ctx, b).Close(); err != nil {
				return nil, fmt.Errorf("claim API records: %w", translate(err))
			}
			// A claim that lost to a record committed after its snapshot saw no record: read it.
			for o, got := range out {
				if !got.claimed && !got.found {
					rec, err := apiKeysGetOn(ctx, conn, apikey.Key{ScopeHash: o.scopeHash, KeyHash: o.keyHash})
					if err != nil {
						return nil, err
					}
					out[o] = apiClaimed{rec: rec, found: rec.ScopeHash != ""}
				}
			}
			return out, nil
		},
	}
}
