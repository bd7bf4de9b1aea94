// Package consumer is the Go SDK a consuming service embeds to take part in replays safely. It
// keeps one ledger row per (consumer, event ID, effect version) and moves it through
//
//	received -> processing (a lease) -> completed | uncertain
//
// A message's row is claimed as a lease, not a lock: the holder heartbeats while its handler runs,
// and a lease that lapses is taken over only if no external call had started under it. Every
// Effects.Call first records that a call is starting, so a crash or stall mid-call leaves a row
// that cannot be re-run blindly: it becomes uncertain, is never retried automatically and waits for
// a person (re-running it could charge a card twice, which is what an idempotency ledger exists to
// prevent). A row is completed only after the handler returned, with the result, its hash and the
// references of the calls made, so a redelivery or a replay of a completed event is answered from
// the ledger without calling the handler. Fail closed: any error from a call that started leaves
// the row uncertain too, unless the handler marks it NotExecuted (the request was never sent, or
// the provider refused it before acting). A terminal business failure (Business) is a stored
// result like any other; a transient failure in which no call ran releases the row to received
// for a retry, and after
// Config.MaxDeliver deliveries the message goes to the dead-letter subject with its payload
// unchanged, ready for `replayctl plan`.
//
// The same event ID with a different request is a conflict, refused and never processed. The
// request is the payload's fingerprint (package fingerprint, v2): Config.Fingerprint leaves out
// volatile members such as a send time and sorts set-like arrays, so a producer's retry is a
// duplicate; a stored row is always compared under the algorithm it was written with.
//
// Replayed messages carry Replay-Job and Replay-Effect-Version and are accepted only while that
// (job, version) is registered as executing, so bumping the version by hand cannot bypass dedup.
// Shadow requests (ServeShadow) run the handler with every call recorded and none made, and write
// nothing to the ledger. The NATS side of the contract is in package protocol and docs/protocol.md.
package consumer
