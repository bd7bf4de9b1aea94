package dlq_test

import (
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/replayctl/replayctl/dlq"
)

func TestPullBatchKeepsAPullNearItsByteBudget(t *testing.T) {
	for _, c := range []struct {
		name       string
		msgs, size uint64
		want       int
	}{
		{"small messages: the count", 1_000_000, 300, 2000},
		{"1 MiB messages", 1000, 1 << 20, 16},
		{"8 MiB messages", 100, 8 << 20, 2},
		{"messages above the budget: one at a time", 10, 32 << 20, 1},
		{"an empty stream", 0, 0, 2000},
	} {
		st := jetstream.StreamState{Msgs: c.msgs, Bytes: c.msgs * c.size}
		if got := dlq.PullBatch(st, 2000); got != c.want {
			t.Errorf("%s: PullBatch = %d, want %d", c.name, got, c.want)
		}
	}
}
