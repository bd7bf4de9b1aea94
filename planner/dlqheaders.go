package planner

import (
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"

	"github.com/replayctl/replayctl/manifest"
	"github.com/replayctl/replayctl/protocol"
)

// errHeaderMissing marks a DLQ header that is absent, as opposed to present with a bad value:
// the manifest counts the two apart (missingEventId, invalidEventId).
var errHeaderMissing = errors.New("header is missing")

// dlqHeaders is what plan reads from one DLQ message's headers. A field whose Err is set is not
// usable, and the error names the header.
type dlqHeaders struct {
	EventID    string
	EventIDErr error
	// Reason is the failure reason made safe to store and count (cleanReason); never empty.
	Reason             string
	OriginalSubject    string
	OriginalSubjectErr error
}

// parseDLQHeaders reads the headers names of h. Attempts and FailedAt are only recorded by name in
// the manifest, never read, so a garbled value there cannot refuse a message.
func parseDLQHeaders(h nats.Header, names manifest.Headers) dlqHeaders {
	var d dlqHeaders
	if values := h[names.EventID]; len(values) == 0 {
		d.EventIDErr = fmt.Errorf("%s %w", names.EventID, errHeaderMissing)
	} else if err := manifest.ValidateEventID(values[0]); err != nil {
		d.EventIDErr = fmt.Errorf("%s header: %w", names.EventID, err)
	} else {
		d.EventID = values[0]
	}
	d.Reason = cleanReason(h.Get(names.Reason))
	if values := h[names.OriginalSubject]; len(values) == 0 {
		d.OriginalSubjectErr = fmt.Errorf("%s %w", names.OriginalSubject, errHeaderMissing)
	} else if err := protocol.ValidatePublishSubject(values[0]); err != nil {
		d.OriginalSubjectErr = fmt.Errorf("%s header: %w", names.OriginalSubject, err)
	} else {
		d.OriginalSubject = values[0]
	}
	return d
}
