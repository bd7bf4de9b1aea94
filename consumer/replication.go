package consumer

import (
	"context"

	"github.com/replayctl/replayctl/health"
)

// warnAboutReplication logs, once at start, when the ledger's replication lets a failover lose
// rows the SDK was told were written: a lost claim or completion makes the next delivery of its
// event run the external call again. A failed read is only logged: it must not stop the service.
func (c *Consumer) warnAboutReplication(ctx context.Context) {
	rep, err := c.cfg.Store.Replication(ctx)
	if err != nil {
		c.log.Warn("consumer: could not read the ledger's replication settings", "consumer", c.cfg.Name, "err", err)
		return
	}
	if _, w := health.JudgeReplication(rep); w != nil {
		c.log.Warn("consumer: "+w.Summary, "consumer", c.cfg.Name, "do", w.Action)
	}
}
