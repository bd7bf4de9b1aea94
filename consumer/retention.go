package consumer

import (
	"context"
	"fmt"

	"github.com/replayctl/replayctl/apikey"
)

// registerRetention records the consumer's ResultRetention, EvidenceRetention and TombstoneRetention in the ledger as
// its retention policy, before the first message: `replayctl plan` judges old events by the
// registered EvidenceRetention instead of asking the operator, and `replayctl keys policy` shows
// it beside the API routes' (docs/ledger.md, "Retention is a contract").
func (c *Consumer) registerRetention(ctx context.Context) error {
	err := c.cfg.Store.RetentionPoliciesRegister(ctx, []apikey.Policy{{Kind: apikey.PolicyConsumer, Name: c.cfg.Name,
		ReplayWindow: c.cfg.ResultRetention, EvidenceWindow: c.cfg.EvidenceRetention, TombstoneWindow: c.cfg.TombstoneRetention,
		RegisteredBy: "consumer " + c.cfg.Name}})
	if err != nil {
		return fmt.Errorf("consumer %s: register its retention policy: %w", c.cfg.Name, err)
	}
	return nil
}
