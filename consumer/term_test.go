package consumer_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/replayctl/replayctl/consumer"
)

// A conflicting or uncertain message is termed: the server must never deliver it again, whatever
// its version. nats-server before 2.10.4 ignores a term with a reason, which made these messages
// come back every AckWait forever; .ci/run runs this test against the machine's nats-server too.
func TestProcessATermedMessageIsNeverRedelivered(t *testing.T) {
	for name, setup := range map[string]func(e *env, c *consumer.Consumer, cons jetstream.Consumer) consumer.OutcomeKind{
		"conflict": func(e *env, c *consumer.Consumer, cons jetstream.Consumer) consumer.OutcomeKind {
			e.publish("e1", orderJSON("acct-1", 250), nil)
			e.processNext(c, cons, consumer.OutcomeCompleted)
			e.publish("e1", orderJSON("acct-1", 999), nil)
			return consumer.OutcomeConflict
		},
		"uncertain": func(e *env, _ *consumer.Consumer, _ jetstream.Consumer) consumer.OutcomeKind {
			e.p.failWith(context.DeadlineExceeded)
			e.publish("e1", orderJSON("acct-1", 250), nil)
			return consumer.OutcomeUncertain
		},
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			c := e.newConsumer(nil)
			cons := e.durable(c)
			want := setup(e, c, cons)
			e.processNext(c, cons, want)

			info, err := cons.Info(e.ctx)
			if err != nil {
				t.Fatal(err)
			}
			// Past the AckWait (twice the test Heartbeat), an ignored term is redelivered.
			wait := info.Config.AckWait + time.Second
			batch, err := cons.Fetch(1, jetstream.FetchMaxWait(wait))
			if err != nil {
				t.Fatal(err)
			}
			for msg := range batch.Messages() {
				meta, _ := msg.Metadata()
				t.Fatalf("the %s message was termed and came back (delivery %d, server %s)", name, meta.NumDelivered,
					e.nats.Conn.ConnectedServerVersion())
			}
			e.settled(cons)
		})
	}
}
