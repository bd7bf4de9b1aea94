package protocol_test

import (
	"strings"
	"testing"
	"time"

	"github.com/replayctl/replayctl/protocol"
)

func TestDedupWindowWarnsWhenTheRunOutlastsIt(t *testing.T) {
	for _, tc := range []struct {
		name         string
		targets      int64
		rate         float64
		unratedWarns bool
		exceeded     bool
		says         string
	}{
		{"at a rate too slow", 3000, 20, false, true, "at --rate 20, publishing the 3000 targets takes about 2m30s"},
		{"at a rate that fits", 3000, 25, false, false, ""},
		{"plan: needs more than 1/s", 3000, 0, true, true, "at any --rate below 25 targets/s"},
		{"plan: fits at 1/s", 120, 0, true, false, ""},
		{"execute without --rate: the consumer's pace", 3000, 0, false, false, ""},
	} {
		d := protocol.NewDedupWindow("BILLING", 2*time.Minute, tc.targets, tc.rate, tc.unratedWarns)
		if d.Exceeded != tc.exceeded {
			t.Errorf("%s: exceeded %t, want %t (%+v)", tc.name, d.Exceeded, tc.exceeded, d)
		}
		w := d.Warning()
		if !tc.exceeded {
			if w != "" {
				t.Errorf("%s: warns %q", tc.name, w)
			}
			continue
		}
		for _, want := range []string{tc.says, "duplicate window of 2m0s", "at most once", "run at --rate 25 or more", "--dupe-window"} {
			if !strings.Contains(w, want) {
				t.Errorf("%s: warning lacks %q: %s", tc.name, want, w)
			}
		}
	}
}
