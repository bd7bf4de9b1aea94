// Command replayctl plans, shadows and executes dead-letter-queue replays on NATS JetStream with
// an idempotency ledger in PostgreSQL. See "replayctl --help".
package main

import (
	"os"

	"github.com/replayctl/replayctl/cmd"
)

func main() { os.Exit(cmd.Execute()) }
