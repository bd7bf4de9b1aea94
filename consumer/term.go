package consumer

import (
	"strconv"
	"strings"

	"github.com/replayctl/replayctl/internal/clip"
)

// termReasonSince is the first nats-server release that reads the reason of a +TERM
// (nats-server #4697, v2.10.4). Older servers compare the whole ack body with "+TERM", so a
// term with a reason matches nothing: the message is neither termed nor acked, and comes back
// every AckWait forever.
var termReasonSince = [3]int{2, 10, 4}

// term tells the server never to redeliver d's message. The reason goes with it where the
// server reads one (it reaches the MSG_TERMINATED advisory); elsewhere the term is sent plain,
// because a term the server ignores is worse than a term without its reason.
func (c *Consumer) term(d *delivery, reason error) {
	var err error
	if termReasonRead(c.cfg.Conn.ConnectedServerVersion()) {
		err = d.msg.TermWithReason(clip.Stored(reason.Error(), maxReasonBytes))
	} else {
		err = d.msg.Term()
	}
	if err != nil {
		c.log.Warn("term failed", "consumer", c.cfg.Name, "event_id", d.ev.ID, "error", err)
	}
}

// warnIfTermReasonIgnored says once per Run that the connected server is too old to carry a
// term's reason, so an operator watching advisories knows why they are empty.
func (c *Consumer) warnIfTermReasonIgnored() {
	if v := c.cfg.Conn.ConnectedServerVersion(); !termReasonRead(v) {
		c.log.Warn("nats-server does not read a term's reason before 2.10.4: refused, conflicting and uncertain "+
			"messages are termed without one, so their MSG_TERMINATED advisories carry no reason",
			"consumer", c.cfg.Name, "server_version", v)
	}
}

// termReasonRead reports whether a server of version ("2.10.4", "v2.11.0-RC.1") reads a term's
// reason. An unknown or unparsable version (the connection is down right now) counts as too old:
// a plain term works on every server.
func termReasonRead(version string) bool {
	core, _, _ := strings.Cut(strings.TrimPrefix(version, "v"), "-")
	parts := strings.Split(core, ".")
	if len(parts) != 3 {
		return false
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil {
			return false
		}
		if n != termReasonSince[i] {
			return n > termReasonSince[i]
		}
	}
	return true
}
