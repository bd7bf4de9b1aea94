package protocol_test

import (
	"testing"

	"github.com/replayctl/replayctl/protocol"
)

func TestWriteForbiddenIsReadStrictly(t *testing.T) {
	for _, b := range []bool{true, false} {
		if got, err := protocol.ParseWriteForbidden(protocol.FormatBool(b)); err != nil || got != b {
			t.Errorf("ParseWriteForbidden(FormatBool(%v)) = %v, %v", b, got, err)
		}
	}
	for in, want := range map[string]bool{"true": true, " TRUE ": true, "false": false, "False": false, "": false} {
		if got, err := protocol.ParseWriteForbidden(in); err != nil || got != want {
			t.Errorf("ParseWriteForbidden(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	// A value the sender may have meant as "forbid" is refused, never read as "allow".
	for _, in := range []string{"yes", "1", "on", "ture"} {
		if _, err := protocol.ParseWriteForbidden(in); err == nil {
			t.Errorf("ParseWriteForbidden(%q) accepted it", in)
		}
	}
}

func TestNamesFollowTheContract(t *testing.T) {
	if got := protocol.ShadowSubject("billing"); got != "replay.shadow.billing" {
		t.Errorf("ShadowSubject = %q", got)
	}
	if got := protocol.MsgID("job-1", "evt-9"); got != "job-1:evt-9" {
		t.Errorf("MsgID = %q", got)
	}
}
