package dlq

import (
	"net/textproto"
	"slices"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"

	"github.com/replayctl/replayctl/manifest"
	"github.com/replayctl/replayctl/protocol"
)

// Replay names what a DLQ message is replayed as.
type Replay struct {
	EventID        string
	JobID          string
	EffectVersion  int
	WriteForbidden bool
	// Strip are headers of the DLQ message left off the replay (plan's --strip-header).
	Strip []string
}

// ReplayMsg is the replay of the DLQ message (data, header), read with names, on subject: its
// payload unchanged and its own headers carried over, less the DLQ's headers, Nats-* and earlier
// Replay-* ones, plus the replay protocol's headers; its traceparent moves to
// Replay-Original-Traceparent.
func ReplayMsg(subject string, data []byte, header nats.Header, names manifest.Headers, r Replay) *nats.Msg {
	return NewJobReplay(names, r.JobID, r.EffectVersion, r.WriteForbidden).Msg(subject, data, header, r.EventID)
}

// JobReplay builds the replays of one job's targets. The replay headers every target shares are
// built once: per target a replay then allocates its event's two values, not six (execute builds
// one per target, and its allocations are garbage the collector pays for).
type JobReplay struct {
	names                  manifest.Headers
	jobID                  string
	shared                 [4]sharedHeader
	eventIDName, msgIDName string
	strip                  []string
}

// sharedHeader is a header with the same value on every replay of a job. Its value slice is shared
// by all of them: nats.go only reads it, and Header.Set and Add on one replay replace or grow
// that replay's own entry, never the array.
type sharedHeader struct {
	name  string
	value []string
}

// NewJobReplay prepares the replays of job jobID under effectVersion, reading DLQ messages with
// names.
func NewJobReplay(names manifest.Headers, jobID string, effectVersion int, writeForbidden bool) *JobReplay {
	j := &JobReplay{names: names, jobID: jobID}
	all := Replay{JobID: jobID, EffectVersion: effectVersion, WriteForbidden: writeForbidden}.headers()
	for i, h := range all[1:5] {
		// Set into the map directly, so under the name Header.Get looks for.
		j.shared[i] = sharedHeader{name: textproto.CanonicalMIMEHeaderKey(h.name), value: []string{h.value}}
	}
	j.eventIDName, j.msgIDName = textproto.CanonicalMIMEHeaderKey(all[0].name), textproto.CanonicalMIMEHeaderKey(all[5].name)
	return j
}

// Stripping leaves headers off every replay (the manifest's source.stripHeaders) and returns j.
func (j *JobReplay) Stripping(headers []string) *JobReplay {
	j.strip = canonical(headers)
	return j
}

// Msg is event eventID's replay of the DLQ message (data, header) on subject, as ReplayMsg.
func (j *JobReplay) Msg(subject string, data []byte, header nats.Header, eventID string) *nats.Msg {
	size := 3 + len(j.shared)
	for name := range header {
		if carried(name, j.names, j.strip) {
			size++
		}
	}
	// Sized up front: grown from empty, the map was reallocated on the way to its eight or so
	// entries.
	msg := &nats.Msg{Subject: subject, Data: data, Header: make(nats.Header, size)}
	for name, values := range header {
		if carried(name, j.names, j.strip) {
			msg.Header[name] = values
		}
	}
	for _, h := range j.shared {
		msg.Header[h.name] = h.value
	}
	msg.Header[j.eventIDName] = []string{eventID}
	msg.Header[j.msgIDName] = []string{protocol.MsgID(j.jobID, eventID)}
	if _, v := protocol.HeaderFold(header, protocol.HeaderTraceparent); v != nil {
		msg.Header[protocol.HeaderReplayOriginalTraceparent] = v
	}
	return msg
}

// ReplaySize is what the server's max_payload is checked against for ReplayMsg (payload plus
// encoded headers, the subject apart), computed without building the message: plan sizes every
// message it scans. It follows nats.go's header encoding: "NATS/1.0\r\n", one "name: value\r\n"
// per value, each value trimmed, and a closing "\r\n".
func ReplaySize(data []byte, header nats.Header, names manifest.Headers, r Replay) int {
	size := len(data) + len("NATS/1.0\r\n") + len("\r\n")
	line := func(name, value string) int {
		return len(name) + len(": ") + len(textproto.TrimString(value)) + len("\r\n")
	}
	strip := canonical(r.Strip)
	for name, values := range header {
		if carried(name, names, strip) {
			for _, v := range values {
				size += line(name, v)
			}
		}
	}
	for _, h := range r.headers() {
		size += line(h.name, h.value)
	}
	_, traceparent := protocol.HeaderFold(header, protocol.HeaderTraceparent)
	for _, v := range traceparent {
		size += line(protocol.HeaderReplayOriginalTraceparent, v)
	}
	return size
}

type headerValue struct{ name, value string }

// headers are r's replay headers: the event's own first and last, the job's four between
// (NewJobReplay relies on the order).
func (r Replay) headers() [6]headerValue {
	return [6]headerValue{
		{protocol.HeaderEventID, r.EventID},
		{protocol.HeaderReplayJob, r.JobID},
		{protocol.HeaderReplayMode, protocol.ModeExecute},
		{protocol.HeaderReplayEffectVersion, strconv.Itoa(r.EffectVersion)},
		{protocol.HeaderReplayWriteForbidden, protocol.FormatBool(r.WriteForbidden)},
		{protocol.HeaderMsgID, protocol.MsgID(r.JobID, r.EventID)},
	}
}

// carried reports whether a DLQ message's header travels with its replay. The trace context does
// not: it names the failed delivery, which the replay carries as Replay-Original-Traceparent; a
// replay is a trace of its own (execute's, when it traces), not a late child of that one.
func carried(name string, names manifest.Headers, strip []string) bool {
	switch name {
	case names.EventID, names.Reason, names.OriginalSubject, names.Attempts, names.FailedAt, HeaderReasonDetail:
		return false
	}
	if strings.EqualFold(name, protocol.HeaderTraceparent) || strings.EqualFold(name, protocol.HeaderTracestate) {
		return false
	}
	if slices.Contains(strip, name) {
		return false
	}
	return !strings.HasPrefix(name, "Nats-") && !strings.HasPrefix(name, "Replay-")
}

// canonical is headers in the form nats.Header keys them.
func canonical(headers []string) []string {
	out := make([]string, len(headers))
	for i, h := range headers {
		out[i] = textproto.CanonicalMIMEHeaderKey(h)
	}
	return out
}

// Unstrippable reports why name may not be stripped from a replay, or "" when it may: the event
// ID and the replay protocol's headers are what make a replay safe.
func Unstrippable(name string, names manifest.Headers) string {
	c := textproto.CanonicalMIMEHeaderKey(name)
	switch {
	case c == textproto.CanonicalMIMEHeaderKey(names.EventID) || c == protocol.HeaderEventID:
		return "the event ID is what the consumer's ledger deduplicates on"
	case strings.HasPrefix(c, "Replay-") || strings.HasPrefix(c, "Nats-"):
		return "the replay and NATS headers are set by execute, not carried from the DLQ message"
	}
	return ""
}
