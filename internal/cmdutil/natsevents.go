package cmdutil

import (
	"errors"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/replayctl/replayctl/internal/iostreams"
	"github.com/replayctl/replayctl/internal/natsconn"
	"github.com/replayctl/replayctl/internal/natsurl"
)

// connectionEvents logs a lost NATS connection and its return on stderr as they happen, one
// timestamped line each: a long execute or shadow that goes quiet while nats.go reconnects
// would otherwise look hung in a nohup or CI log, and the operator could not tell an outage
// from a stalled consumer.
func connectionEvents(ios *iostreams.IOStreams, settings natsconn.Settings) []nats.Option {
	var lostAt, badHeaders atomic.Int64
	return []nats.Option{
		// nats.go's own handler prints a bare line ("nats: message could not decode headers") in
		// the middle of a progress bar; this one says what it means, once and then every 1000th.
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			subject := ""
			if sub != nil {
				subject = " on " + sub.Subject
			}
			if errors.Is(err, nats.ErrBadHeaderMsg) {
				if n := badHeaders.Add(1); n == 1 || n%1000 == 0 {
					LogLineOverBar(ios, "NATS: %d message(s) so far%s had headers that cannot be decoded; each counts as a message without a usable Event-Id", n, subject)
				}
				return
			}
			LogLineOverBar(ios, "NATS: %s%s", settings.Scrub(natsurl.ScrubError(err, settings.Servers()).Error()), subject)
		}),
		nats.DisconnectErrHandler(func(nc *nats.Conn, err error) {
			if err == nil || nc.IsClosed() {
				return // a Close of ours, not an outage
			}
			lostAt.Store(time.Now().UnixNano())
			where := nc.ConnectedUrlRedacted()
			if where == "" {
				where = natsurl.Redact(settings.Servers())
			}
			LogLineOverBar(ios, "NATS connection to %s lost: %s; reconnecting", where,
				settings.Scrub(natsurl.ScrubError(err, settings.Servers()).Error()))
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			after := ""
			if at := lostAt.Swap(0); at != 0 {
				after = " after " + time.Since(time.Unix(0, at)).Round(100*time.Millisecond).String()
			}
			LogLineOverBar(ios, "NATS reconnected to %s%s", nc.ConnectedUrlRedacted(), after)
		}),
	}
}
