package cmdutil

import (
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
	var lostAt atomic.Int64
	return []nats.Option{
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
