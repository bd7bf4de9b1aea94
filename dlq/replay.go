package dlq

import (
	"net/textproto"
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
}

// ReplayMsg is the replay of the DLQ message (data, header), read with names, on subject: its
// payload unchanged and its own headers (trace IDs and the like) carried over, less the DLQ's
// headers, Nats-* and earlier Replay-* ones, plus the replay protocol's headers.
func ReplayMsg(subject string, data []byte, header nats.Header, names manifest.Headers, r Replay) *nats.Msg {
	msg := nats.NewMsg(subject)
	msg.Data = data
	for name, values := range header {
		if carried(name, names) {
			msg.Header[name] = values
		}
	}
	for _, h := range r.headers() {
		msg.Header.Set(h.name, h.value)
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
	for name, values := range header {
		if carried(name, names) {
			for _, v := range values {
				size += line(name, v)
			}
		}
	}
	for _, h := range r.headers() {
		size += line(h.name, h.value)
	}
	return size
}

type headerValue struct{ name, value string }

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

// carried reports whether a DLQ message's header travels with its replay.
func carried(name string, names manifest.Headers) bool {
	switch name {
	case names.EventID, names.Reason, names.OriginalSubject, names.Attempts, names.FailedAt, HeaderReasonDetail:
		return false
	}
	return !strings.HasPrefix(name, "Nats-") && !strings.HasPrefix(name, "Replay-")
}
