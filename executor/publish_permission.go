package executor

import (
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go"
)

// publishNotPermitted returns an error when the NATS server refused this connection's publishes
// to subject for its permissions. The server says so only asynchronously (the publish itself is
// never acknowledged), so without this check every target would wait out its acknowledgement
// timeout and retry rounds, and the run would end as a stall that never names the cause.
func publishNotPermitted(nc *nats.Conn, subject string) error {
	last := nc.LastError()
	if !errors.Is(last, nats.ErrPermissionViolation) || !strings.Contains(last.Error(), `Publish to "`+subject+`"`) {
		return nil
	}
	return fmt.Errorf("%w: the NATS server refused the publish of replays to %s (%v): nothing was delivered; "+
		"the user replayctl connects as needs publish permission on the consumer's subjects (docs/nats/permissions.conf), "+
		"then run execute again", ErrPublishNotPermitted, subject, last)
}
