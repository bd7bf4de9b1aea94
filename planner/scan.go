package planner

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/replayctl/replayctl/dlq"
	"github.com/replayctl/replayctl/fingerprint"
	"github.com/replayctl/replayctl/internal/clip"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/manifest"
	"github.com/replayctl/replayctl/protocol"
)

// scanBatch is how many messages the ordered consumer keeps buffered, at most: with the byte
// budget of dlq.PullBatch it bounds the scan's memory.
const scanBatch = 2000

// maxUnusableWhy bounds the stored reason of an unusable message: it quotes a header's value.
const maxUnusableWhy = 200

// scanStallTimeout ends a scan that stops receiving messages while the stream still reports pending
// ones, instead of hanging a runbook.
const scanStallTimeout = 30 * time.Second

// progressEvery is how many messages pass between progress callbacks.
const progressEvery = 1000

// scanCounts are the per-message figures of a scan; the ledger computes the per-event ones.
type scanCounts struct {
	Scanned, MissingEventID, InvalidEventID, MissingOriginalSubject, NotMatchingFailureFilter, OverMaxPayload int64
	MissingEventIDSeqs, OverMaxPayloadSeqs                                                                    []uint64
	// Unusable says why each message MissingEventIDSeqs lists was kept out.
	Unusable          []manifest.UnusableMessage
	FirstSeq, LastSeq uint64
	// MaxPayload is the server's limit the replays were sized against; LargestOverMaxPayload the
	// largest replay above it.
	MaxPayload, LargestOverMaxPayload int64
	// ReplaySubject is the subject the first usable message replays to.
	ReplaySubject string
	// Repeats names the event IDs the scan may have seen more than once.
	Repeats ledger.ScanRepeats
	// NotSelected, WhereNotJSON and WhereErrors are what the selection left out (manifest.Stats);
	// WhereError is the first evaluation error, for the warning.
	NotSelected, WhereNotJSON, WhereErrors int64
	WhereError                             string
	// ReplayFailures counts, per event ID, the DLQ messages that are dead-lettered replays of
	// this tool (they carry Replay-Job): the loop guard's input.
	ReplayFailures map[string]int
	// BeforeHistory counts the usable DLQ messages stored before the consumer's ledger history
	// starts; OldestBeforeHistory is the oldest of them.
	BeforeHistory       int64
	OldestBeforeHistory time.Time
	// Found are the IDs of --ids-from and --exclude-ids-from that a message in the boundary carried.
	Found map[string]bool
}

// scanner walks the DLQ stream with an ordered consumer and turns each usable message into a row
// for COPY (through scanPipe), so the scan never holds more than a bounded number of messages.
type scanner struct {
	historyStart time.Time
	ctx          context.Context
	iter         jetstream.MessagesContext
	unwatch      func() bool
	headers      manifest.Headers
	backfill     bool
	replay       dlq.Replay
	hashers      planHashers
	failure      *regexp.Regexp
	sel          scanSelection
	hist         *scanHistograms
	until        *time.Time
	lastSeq      uint64
	total        int64
	progress     func(scanned, total int64)
	counts       scanCounts
	// repeats sees every usable message's event ID, so the collapse need only look at the few
	// that may repeat.
	repeats *repeatFilter
	// row is the current usable message's row, data its payload, until fill fingerprints it.
	row       []any
	data      []byte
	err       error
	done      bool
	remaining uint64
}

// startScan opens the ordered consumer over the boundary of opts. It returns a nil scanner when the
// boundary holds no message.
func startScan(ctx context.Context, js jetstream.JetStream, opts *Options, info *jetstream.StreamInfo, replay dlq.Replay,
	hashers planHashers) (*scanner, error) {
	if info.State.Msgs == 0 {
		return nil, nil
	}
	cfg := jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverAllPolicy}
	if opts.SubjectFilter != "" {
		cfg.FilterSubjects = []string{opts.SubjectFilter}
	}
	if opts.Since != nil {
		cfg.DeliverPolicy = jetstream.DeliverByStartTimePolicy
		since := *opts.Since
		cfg.OptStartTime = &since
	}
	cons, err := js.OrderedConsumer(ctx, opts.Stream, cfg)
	if err != nil {
		return nil, fmt.Errorf("scan stream %s: create ordered consumer: %w", opts.Stream, err)
	}
	iter, err := cons.Messages(jetstream.PullMaxMessages(dlq.PullBatch(info.State, scanBatch)))
	if err != nil {
		return nil, fmt.Errorf("scan stream %s: %w", opts.Stream, err)
	}
	ci := cons.CachedInfo()
	if ci == nil || ci.NumPending == 0 {
		iter.Stop()
		return nil, nil
	}
	s := &scanner{
		ctx:  ctx,
		iter: iter,
		// Next cannot take both a context and a stall timeout; stopping the iterator on
		// cancellation makes Ctrl-C end the scan at once.
		unwatch:      context.AfterFunc(ctx, iter.Stop),
		headers:      opts.Headers,
		backfill:     opts.Backfill,
		replay:       replay,
		counts:       scanCounts{MaxPayload: js.Conn().MaxPayload()},
		hashers:      hashers,
		until:        opts.Until,
		historyStart: opts.historyStart,
		lastSeq:      info.State.LastSeq,
		total:        int64(ci.NumPending),
		progress:     opts.Progress,
		remaining:    ci.NumPending,
		repeats:      newRepeatFilter(ci.NumPending),
	}
	if opts.FailureMatch != "" {
		s.failure = regexp.MustCompile(opts.FailureMatch)
	}
	s.sel = newScanSelection(opts)
	s.hist = opts.histograms
	return s, nil
}

// Next advances to the next message that becomes a row; it counts and skips the others.
func (s *scanner) Next() bool {
	for !s.done {
		msg, err := s.iter.Next(jetstream.NextMaxWait(scanStallTimeout))
		if err != nil {
			s.stop()
			if ctxErr := s.ctx.Err(); ctxErr != nil {
				s.err = fmt.Errorf("scan stopped after stream sequence %d: %w (%v)", s.counts.LastSeq, ctxErr, context.Cause(s.ctx))
			} else if errors.Is(err, nats.ErrTimeout) {
				s.err = fmt.Errorf("scan stalled: no message for %s at stream sequence %d with %d still pending; check the NATS server and run plan again",
					scanStallTimeout, s.counts.LastSeq, s.remaining)
			} else {
				s.err = fmt.Errorf("scan interrupted after stream sequence %d: %w", s.counts.LastSeq, err)
			}
			return false
		}
		meta, err := msg.Metadata()
		if err != nil {
			s.stop()
			s.err = fmt.Errorf("scan: read message metadata: %w", err)
			return false
		}
		seq := meta.Sequence.Stream
		if seq > s.lastSeq || (s.until != nil && meta.Timestamp.After(*s.until)) {
			s.stop()
			return false
		}
		s.remaining = meta.NumPending
		if seq >= s.lastSeq || meta.NumPending == 0 {
			s.stop()
		}
		if s.accept(msg, seq, meta.Timestamp) {
			return true
		}
	}
	return false
}

// accept counts one message and, when it is usable, prepares its row.
func (s *scanner) accept(msg jetstream.Msg, seq uint64, storedAt time.Time) bool {
	c := &s.counts
	c.Scanned++
	if c.FirstSeq == 0 {
		c.FirstSeq = seq
	}
	c.LastSeq = seq
	if s.progress != nil && (c.Scanned%progressEvery == 0 || s.done) {
		s.progress(c.Scanned, s.total)
	}
	if s.backfill {
		return s.acceptOriginal(msg, seq, storedAt)
	}
	if !s.historyStart.IsZero() && storedAt.Before(s.historyStart) {
		c.BeforeHistory++
		if c.OldestBeforeHistory.IsZero() || storedAt.Before(c.OldestBeforeHistory) {
			c.OldestBeforeHistory = storedAt
		}
	}
	d := dlq.Parse(msg.Headers(), s.headers)
	switch {
	case errors.Is(d.EventIDErr, dlq.ErrHeaderMissing):
		c.MissingEventID++
		c.noteMissing(seq, d.EventIDErr)
		return false
	case d.EventIDErr != nil:
		c.InvalidEventID++
		c.noteMissing(seq, d.EventIDErr)
		return false
	}
	if s.failure != nil && !s.failure.MatchString(d.Reason) {
		c.NotMatchingFailureFilter++
		return false
	}
	if msg.Headers().Get(protocol.HeaderReplayJob) != "" {
		if c.ReplayFailures == nil {
			c.ReplayFailures = map[string]int{}
		}
		c.ReplayFailures[d.EventID]++
	}
	if !s.selected(msg, d.EventID, d.Reason) {
		return false
	}
	if s.sel.toSubject != "" {
		d.OriginalSubject, d.OriginalSubjectErr = s.sel.toSubject, nil
	}
	// An unusable subject is counted with the missing ones: execute could route neither.
	if d.OriginalSubjectErr != nil {
		c.MissingOriginalSubject++
		c.noteMissing(seq, d.OriginalSubjectErr)
		return false
	}
	if s.overMaxPayload(msg, d.EventID, seq) {
		return false
	}
	if s.hist != nil {
		s.hist.add(d.EventID, d.Reason, d.OriginalSubject, msg.Headers().Get(s.headers.Attempts), storedAt)
	}
	s.row, s.data = s.rowOf(seq, d.EventID, d.Reason, d.OriginalSubject, storedAt), msg.Data()
	return true
}

// acceptOriginal prepares the row of a backfill's message: an original has no failure reason,
// and its own subject is where it replays.
func (s *scanner) acceptOriginal(msg jetstream.Msg, seq uint64, storedAt time.Time) bool {
	c := &s.counts
	id, err := dlq.ParseEventID(msg.Headers(), s.headers.EventID)
	switch {
	case errors.Is(err, dlq.ErrHeaderMissing):
		c.MissingEventID++
		c.noteMissing(seq, err)
		return false
	case err != nil:
		c.InvalidEventID++
		c.noteMissing(seq, err)
		return false
	}
	if !s.selected(msg, id, "") {
		return false
	}
	if s.overMaxPayload(msg, id, seq) {
		return false
	}
	s.row, s.data = s.rowOf(seq, id, "", msg.Subject(), storedAt), msg.Data()
	return true
}

// rowOf is a message's row of ledger.PlanScanColumns without its fingerprints, which fingerprint
// fills in off the scan's goroutine.
func (s *scanner) rowOf(seq uint64, eventID, reason, subject string, storedAt time.Time) []any {
	if s.counts.ReplaySubject == "" {
		s.counts.ReplaySubject = subject
	}
	s.repeats.add(eventID)
	return []any{int64(seq), eventID, nil, nil, reason, subject, storedAt}
}

// fill sets row's payload_hash and fingerprints from the message's payload; payload_hash stays
// NULL when it is the first fingerprint (ledger.PlanScanColumns).
func (p planHashers) fill(row []any, data []byte) {
	v1Hash := fingerprint.Payload(data)
	fps := p.fingerprints(data, v1Hash)
	row[3] = fps
	if fps[0] != v1Hash {
		row[2] = v1Hash
	}
}

// overMaxPayload counts and lists a message whose replay the server refuses to carry: it would
// fail its target on every execute; kept out here, it is reported with the fix instead.
func (s *scanner) overMaxPayload(msg jetstream.Msg, eventID string, seq uint64) bool {
	c := &s.counts
	replay := s.replay
	replay.EventID = eventID
	size := int64(dlq.ReplaySize(msg.Data(), msg.Headers(), s.headers, replay))
	if size <= c.MaxPayload {
		return false
	}
	c.OverMaxPayload++
	c.LargestOverMaxPayload = max(c.LargestOverMaxPayload, size)
	c.OverMaxPayloadSeqs = appendListed(c.OverMaxPayloadSeqs, seq)
	return true
}

func (c *scanCounts) noteMissing(seq uint64, why error) {
	c.MissingEventIDSeqs = appendListed(c.MissingEventIDSeqs, seq)
	if len(c.Unusable) < manifest.MaxListedSeqs {
		c.Unusable = append(c.Unusable, manifest.UnusableMessage{Seq: seq, Why: clip.Stored(why.Error(), maxUnusableWhy)})
	}
}

// appendListed adds seq to a manifest list of sequences until it holds manifest.MaxListedSeqs.
func appendListed(seqs []uint64, seq uint64) []uint64 {
	if len(seqs) < manifest.MaxListedSeqs {
		seqs = append(seqs, seq)
	}
	return seqs
}

func (s *scanner) stop() {
	if !s.done {
		s.done = true
		s.unwatch()
		s.iter.Stop()
	}
}
