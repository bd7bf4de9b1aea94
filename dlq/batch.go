package dlq

import "github.com/nats-io/nats.go/jetstream"

// pullBudget is about how many bytes of DLQ messages one pull asks for. A count alone asks for
// 2,000 one-megabyte payloads at once: past nats.go's 64 MiB pending-bytes limit per subscription
// the client drops them as a slow consumer, and the ordered consumer only recovers after its
// heartbeat times out (a 1,500-message plan of 900 KB payloads took 61 s instead of 4.2 s). At the
// stream's average message size the count is lowered so a pull, with the half batch the iterator
// asks for ahead, stays well under that limit.
const pullBudget = 16 << 20

// PullBatch is how many messages to pull at once from a stream in state st: at most limit, fewer
// when its messages are large on average, never below 1.
func PullBatch(st jetstream.StreamState, limit int) int {
	if st.Msgs == 0 || st.Bytes == 0 || limit < 1 {
		return max(limit, 1)
	}
	avg := max(st.Bytes/st.Msgs, 1)
	return int(max(min(pullBudget/avg, uint64(limit)), 1))
}
