package reconcile

import (
	"context"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/protocol"
)

// LookupAnswer is the consumer's answer to one look-up, or why there is none (Error).
type LookupAnswer struct {
	Verdict   string
	Detail    string
	FoundRefs []protocol.Effect
	Error     string
}

// Asked says whether the look-up was asked and answered; false leaves the event as it was.
func (a LookupAnswer) Asked() bool { return a.Verdict != "" && a.Error == "" }

// LookUp asks consumer's look-up responder (protocol.ReconcileSubject) about each of rows,
// concurrency at once and each within timeout, as reconcile does, and changes nothing: plan asks
// it about events whose ledger evidence expired. answers[i] is rows[i]'s; a row left unasked
// because the run stopped (no responder, ErrNoResponder; a hung one, ErrUnanswered; a failed
// connection) has the zero answer, and err says why.
func LookUp(ctx context.Context, nc *nats.Conn, consumer string, rows []ledger.UncertainRow, concurrency int,
	timeout time.Duration) (answers []LookupAnswer, err error) {
	a := &asker{nc: nc, consumer: consumer, subject: protocol.ReconcileSubject(consumer), timeout: timeout}
	answers = make([]LookupAnswer, len(rows))
	err = a.askEach(ctx, max(1, concurrency), rows, func(i int, ans answer) {
		answers[i] = LookupAnswer{Verdict: ans.reply.Verdict, Detail: ans.reply.Detail, FoundRefs: ans.reply.ExternalRefs, Error: ans.err}
	}, nil)
	return answers, err
}
