package dlq

import (
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go"

	"github.com/replayctl/replayctl/internal/clip"
	"github.com/replayctl/replayctl/manifest"
	"github.com/replayctl/replayctl/protocol"
)

// MaxReasonRunes bounds a failure reason as stored and counted: reasons often embed a whole
// upstream response, and the histogram must stay readable.
const MaxReasonRunes = 200

// ErrHeaderMissing marks a DLQ header that is absent, as opposed to present with a bad value:
// the manifest counts the two apart (missingEventId, invalidEventId).
var ErrHeaderMissing = errors.New("header is missing")

// Fields is what plan reads from one DLQ message's headers. A field whose Err is set is not
// usable, and the error names the header.
type Fields struct {
	EventID    string
	EventIDErr error
	// Reason is the failure reason made safe to store and count (CleanReason); never empty.
	Reason             string
	OriginalSubject    string
	OriginalSubjectErr error
}

// ParseEventID reads the event ID header name of h, the one header a DLQ message and an original
// share; a missing header's error matches ErrHeaderMissing.
func ParseEventID(h nats.Header, name string) (string, error) {
	values := h[name]
	if len(values) == 0 {
		return "", fmt.Errorf("%s %w", name, ErrHeaderMissing)
	}
	if err := protocol.ValidateEventID(values[0]); err != nil {
		return "", fmt.Errorf("%s header: %w", name, err)
	}
	return values[0], nil
}

// Parse reads the headers names of h. Attempts and FailedAt are only recorded by name in the
// manifest, never read, so a garbled value there cannot refuse a message.
func Parse(h nats.Header, names manifest.Headers) Fields {
	var d Fields
	d.EventID, d.EventIDErr = ParseEventID(h, names.EventID)
	d.Reason = CleanReason(h.Get(names.Reason))
	if values := h[names.OriginalSubject]; len(values) == 0 {
		d.OriginalSubjectErr = fmt.Errorf("%s %w", names.OriginalSubject, ErrHeaderMissing)
	} else if err := protocol.ValidatePublishSubject(values[0]); err != nil {
		d.OriginalSubjectErr = fmt.Errorf("%s header: %w", names.OriginalSubject, err)
	} else {
		d.OriginalSubject = values[0]
	}
	return d
}

// CleanReason makes a failure reason safe to store and count: control characters become spaces,
// invalid UTF-8 is replaced, and it is cut at MaxReasonRunes runes. An absent reason is "(none)".
func CleanReason(r string) string {
	r = strings.TrimSpace(clip.Flat(r, "\uFFFD"))
	if r == "" {
		return "(none)"
	}
	return clip.Runes(r, MaxReasonRunes)
}
