package shadow

import (
	"maps"
	"testing"

	"github.com/replayctl/replayctl/fingerprint"
)

func TestQuotasAreProportionalAndCoverEveryReason(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		counts map[string]int64
		size   int
		want   map[string]int
	}{
		{"proportional", map[string]int64{"a": 600, "b": 300, "c": 100}, 10, map[string]int{"a": 6, "b": 3, "c": 1}},
		{"a rare reason still gets one", map[string]int64{"a": 4500, "b": 5, "c": 1}, 100, map[string]int{"a": 98, "b": 1, "c": 1}},
		{"largest remainder", map[string]int64{"a": 5, "b": 3, "c": 2}, 4, map[string]int{"a": 2, "b": 1, "c": 1}},
		{"capped at the targets", map[string]int64{"a": 2, "b": 1}, 100, map[string]int{"a": 2, "b": 1}},
		{"fewer slots than reasons: the most frequent", map[string]int64{"a": 1, "b": 9, "c": 5}, 2, map[string]int{"b": 1, "c": 1}},
		{"ties go to the first reason", map[string]int64{"y": 3, "x": 3}, 1, map[string]int{"x": 1}},
		{"no targets", map[string]int64{}, 100, map[string]int{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := quotas(c.counts, c.size)
			if !maps.Equal(got, c.want) {
				t.Fatalf("quotas(%v, %d) = %v, want %v", c.counts, c.size, got, c.want)
			}
		})
	}
}

func TestQuotasSumToTheSampleSize(t *testing.T) {
	t.Parallel()
	counts := map[string]int64{"a": 1234, "b": 777, "c": 31, "d": 3, "e": 1, "f": 1}
	for size := 1; size <= 2047; size += 13 {
		q := quotas(counts, size)
		total := 0
		for reason, n := range q {
			if int64(n) > counts[reason] || n < 1 {
				t.Fatalf("size %d: %s gets %d of its %d targets", size, reason, n, counts[reason])
			}
			total += n
		}
		if total != size {
			t.Fatalf("size %d: quotas %v sum to %d", size, q, total)
		}
		if size >= len(counts) && len(q) != len(counts) {
			t.Fatalf("size %d: quotas %v leave a reason out", size, q)
		}
	}
}

func TestSeedIsTheDigestPrefix(t *testing.T) {
	t.Parallel()
	if got := seedOf("sha256:0123456789abcdef0123"); got != "0123456789abcdef" {
		t.Fatalf("seed %q", got)
	}
}

func TestParseReplyRefusesWhatBreaksTheProtocol(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, reply, status string
	}{
		{"ok", `{"eventId":"e1","status":"ok","result":{"a":1},"resultHash":"` + fingerprint.Payload([]byte(`{"a":1}`)) + `","effects":[]}`, statusOK},
		{"hash only", `{"eventId":"e1","status":"ok","resultHash":"sha256:ab","effects":[]}`, statusOK},
		{"transient error", `{"eventId":"e1","status":"error","error":"provider unreachable","effects":[]}`, statusError},
		{"not JSON", `oops`, statusError},
		{"another event", `{"eventId":"e2","status":"ok","result":{},"effects":[]}`, statusError},
		{"unknown status", `{"eventId":"e1","status":"maybe","result":{},"effects":[]}`, statusError},
		{"no result", `{"eventId":"e1","status":"ok","effects":[]}`, statusError},
		{"wrong hash", `{"eventId":"e1","status":"ok","result":{"a":1},"resultHash":"sha256:00","effects":[]}`, statusError},
	}
	for _, c := range cases {
		a := parseReply("e1", []byte(c.reply))
		if a.status != c.status || (c.status == statusError && a.err == "") {
			t.Errorf("%s: %+v, want status %s with a reason for an error", c.name, a, c.status)
		}
	}
}
