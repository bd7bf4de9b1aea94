package dlq

import (
	"github.com/replayctl/replayctl/manifest"
	"github.com/replayctl/replayctl/protocol"
)

// Header names of a DLQ message as the SDK writes it. Plan reads other names when told
// (manifest.Headers records which); the event ID header is the replay protocol's own.
const (
	HeaderEventID = protocol.HeaderEventID
	// HeaderReason carries the reason class: a short, stable cause such as "provider unavailable",
	// the key plan groups and --failure-match matches on.
	HeaderReason = "Dlq-Reason"
	// HeaderReasonDetail carries the failure's full text, event data included, for whoever reads
	// the message; plan never reads it and execute never replays it.
	HeaderReasonDetail    = "Dlq-Reason-Detail"
	HeaderOriginalSubject = "Dlq-Original-Subject"
	HeaderAttempts        = "Dlq-Attempts"
	HeaderFailedAt        = "Dlq-Failed-At"
)

// DefaultHeaders are the names plan reads unless told otherwise.
var DefaultHeaders = manifest.Headers{
	EventID:         HeaderEventID,
	Reason:          HeaderReason,
	OriginalSubject: HeaderOriginalSubject,
	Attempts:        HeaderAttempts,
	FailedAt:        HeaderFailedAt,
}

// WithDefaults fills every empty name of h from DefaultHeaders.
func WithDefaults(h manifest.Headers) manifest.Headers {
	pick := func(v, def string) string {
		if v == "" {
			return def
		}
		return v
	}
	return manifest.Headers{
		EventID:         pick(h.EventID, DefaultHeaders.EventID),
		Reason:          pick(h.Reason, DefaultHeaders.Reason),
		OriginalSubject: pick(h.OriginalSubject, DefaultHeaders.OriginalSubject),
		Attempts:        pick(h.Attempts, DefaultHeaders.Attempts),
		FailedAt:        pick(h.FailedAt, DefaultHeaders.FailedAt),
	}
}
