package ledger

import "github.com/jackc/pgx/v5"

// claimWithoutFlush starts a claim's batch: its implicit transaction commits without waiting for
// the WAL to reach the disk (synchronous_commit off for that transaction alone; the setting ends
// with it, and the connection's next statement commits as configured).
//
// A claim needs no durability of its own. Nothing leaves the process on the strength of a claim:
// before the handler's first external call, the SDK commits "call started" synchronously, and
// before the message is acknowledged, the completion, or the uncertain mark, synchronously. Each
// of those waits until the WAL is flushed up to its own commit record, which PostgreSQL writes
// after the claim's, so the claim is on disk, on the primary and on any synchronous standby,
// before anything depends on it. A claim lost to a crash before that is a claim that had led to
// nothing: the row is as it was, the message is redelivered (it was never acknowledged) and
// claimed again. Another instance that saw the lost claim meanwhile only held back (a lease
// elsewhere), and is redelivered too. What the claim saves is the wait: the claim was a quarter of
// the SDK's commits, each waiting for a flush (docs/benchmarks.md).
func claimWithoutFlush() *pgx.Batch {
	b := &pgx.Batch{}
	b.Queue(`select set_config('synchronous_commit', 'off', true)`)
	return b
}
