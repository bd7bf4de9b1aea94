package dlq_test

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/nats-io/nats.go"

	"github.com/replayctl/replayctl/dlq"
	"github.com/replayctl/replayctl/protocol"
)

// FuzzParse feeds the DLQ header parser what a foreign producer may put in a DLQ
// message: it must never panic; a refused header is named in the error; a reason is always
// storable (valid UTF-8, no control characters, at most 200 runes, never empty); and what it
// accepts, written back as headers, parses to the same values. Seeds are in
// testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	f.Fuzz(func(t *testing.T, eventID, reason, subject string, hasEventID, hasSubject bool) {
		h := nats.Header{}
		if hasEventID {
			h[dlq.DefaultHeaders.EventID] = []string{eventID}
		}
		if reason != "" {
			h[dlq.DefaultHeaders.Reason] = []string{reason}
		}
		if hasSubject {
			h[dlq.DefaultHeaders.OriginalSubject] = []string{subject}
		}
		d := dlq.Parse(h, dlq.DefaultHeaders)

		switch {
		case !hasEventID && d.EventIDErr == nil:
			t.Fatalf("no %s header, yet accepted as %q", dlq.DefaultHeaders.EventID, d.EventID)
		case d.EventIDErr != nil && !strings.Contains(d.EventIDErr.Error(), dlq.DefaultHeaders.EventID):
			t.Fatalf("the error does not name the header: %v", d.EventIDErr)
		case d.EventIDErr == nil && (d.EventID != eventID || protocol.ValidateEventID(eventID) != nil):
			t.Fatalf("accepted event ID %q from %q", d.EventID, eventID)
		case hasEventID && d.EventIDErr != nil && protocol.ValidateEventID(eventID) == nil:
			t.Fatalf("a valid event ID %q refused: %v", eventID, d.EventIDErr)
		}
		switch {
		case !hasSubject && d.OriginalSubjectErr == nil:
			t.Fatalf("no %s header, yet accepted as %q", dlq.DefaultHeaders.OriginalSubject, d.OriginalSubject)
		case d.OriginalSubjectErr != nil && !strings.Contains(d.OriginalSubjectErr.Error(), dlq.DefaultHeaders.OriginalSubject):
			t.Fatalf("the error does not name the header: %v", d.OriginalSubjectErr)
		case d.OriginalSubjectErr == nil && (d.OriginalSubject != subject || protocol.ValidatePublishSubject(subject) != nil):
			t.Fatalf("accepted subject %q from %q", d.OriginalSubject, subject)
		}
		r := d.Reason
		if r == "" || !utf8.ValidString(r) || utf8.RuneCountInString(r) > dlq.MaxReasonRunes || strings.TrimSpace(r) != r ||
			strings.ContainsFunc(r, unicode.IsControl) {
			t.Fatalf("reason %q (from %q) cannot be stored and counted as is", r, reason)
		}
		if dlq.CleanReason(r) != r {
			t.Fatalf("cleaning reason %q again changes it to %q", r, dlq.CleanReason(r))
		}

		if d.EventIDErr == nil && d.OriginalSubjectErr == nil {
			again := dlq.Parse(nats.Header{
				dlq.DefaultHeaders.EventID:         {d.EventID},
				dlq.DefaultHeaders.Reason:          {d.Reason},
				dlq.DefaultHeaders.OriginalSubject: {d.OriginalSubject},
			}, dlq.DefaultHeaders)
			if again != d {
				t.Fatalf("written back and parsed again: %+v, first %+v", again, d)
			}
		}
	})
}
