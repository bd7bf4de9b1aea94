package dlq

import (
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
)

// Bounds of what a DLQ message's reason headers carry, in bytes.
const (
	MaxClassBytes  = 200
	MaxDetailBytes = 1000
)

// DeadLetter is one failed event as it is written to the DLQ.
type DeadLetter struct {
	// Subject is the DLQ subject the message is published to.
	Subject string
	// EventID is empty for a message that had none (it is dead-lettered all the same).
	EventID         string
	OriginalSubject string
	// Class is the reason class (at most MaxClassBytes, header-safe): the same for every event
	// that failed for the same cause. Detail is the failure's text (at most MaxDetailBytes).
	Class, Detail string
	Attempts      int
	FailedAt      time.Time
	Payload       []byte
	// Carried are headers of the failed message kept on the DLQ message, such as the replay
	// headers that show which job a replay failed under.
	Carried nats.Header
}

// Msg is d as a DLQ message in the default header names.
func (d DeadLetter) Msg() *nats.Msg {
	m := nats.NewMsg(d.Subject)
	m.Data = d.Payload
	for name, values := range d.Carried {
		m.Header[name] = values
	}
	if d.EventID != "" {
		m.Header.Set(HeaderEventID, d.EventID)
	}
	m.Header.Set(HeaderReason, d.Class)
	if d.Detail != "" && d.Detail != d.Class {
		m.Header.Set(HeaderReasonDetail, d.Detail)
	}
	m.Header.Set(HeaderOriginalSubject, d.OriginalSubject)
	m.Header.Set(HeaderAttempts, strconv.Itoa(d.Attempts))
	m.Header.Set(HeaderFailedAt, d.FailedAt.UTC().Format(time.RFC3339))
	return m
}
