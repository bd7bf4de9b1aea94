package protocol_test

import (
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/replayctl/replayctl/protocol"
)

// FuzzValidatePublishSubject checks that an accepted Dlq-Original-Subject is one nats.go publishes
// (no white space, no empty token), has no wildcard token, and is text PostgreSQL stores (valid
// UTF-8 without NUL). Seeds are in testdata/fuzz/FuzzValidatePublishSubject.
func FuzzValidatePublishSubject(f *testing.F) {
	f.Fuzz(func(t *testing.T, subject string) {
		err := protocol.ValidatePublishSubject(subject)
		if err != nil {
			if !strings.Contains(err.Error(), "subject") || len(err.Error()) > 300 {
				t.Fatalf("refusal does not say it is about the subject, or is too long: %q", err)
			}
			return
		}
		if !utf8.ValidString(subject) || strings.ContainsFunc(subject, unicode.IsSpace) ||
			strings.ContainsFunc(subject, unicode.IsControl) || len(subject) > protocol.MaxSubjectBytes {
			t.Fatalf("accepted %q", subject)
		}
		for _, token := range strings.Split(subject, ".") {
			if token == "" || token == "*" || token == ">" {
				t.Fatalf("accepted %q with the token %q", subject, token)
			}
		}
	})
}

// FuzzParseEffectVersion checks that Replay-Effect-Version accepts exactly what strconv.Itoa
// writes for 1..2^31-1, and that a refusal names the header. Seeds are in
// testdata/fuzz/FuzzParseEffectVersion.
func FuzzParseEffectVersion(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string) {
		v, err := protocol.ParseEffectVersion(s)
		if err != nil {
			if !strings.Contains(err.Error(), protocol.HeaderReplayEffectVersion) {
				t.Fatalf("refusal does not name the header: %v", err)
			}
			return
		}
		if v < 1 || v > 1<<31-1 || strconv.Itoa(v) != s {
			t.Fatalf("%q accepted as %d", s, v)
		}
	})
}

// FuzzParseWriteForbidden checks that Replay-Write-Forbidden reads only true and false (any case,
// trimmed) or nothing, that FormatBool's spelling reads back, and that a refusal names the header.
// Seeds are in testdata/fuzz/FuzzParseWriteForbidden.
func FuzzParseWriteForbidden(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string) {
		b, err := protocol.ParseWriteForbidden(s)
		if err != nil {
			if !strings.Contains(err.Error(), protocol.HeaderReplayWriteForbidden) {
				t.Fatalf("refusal does not name the header: %v", err)
			}
			return
		}
		v := strings.TrimSpace(s)
		isTrue, isFalse := strings.EqualFold(v, "true"), v == "" || strings.EqualFold(v, "false")
		if isTrue == isFalse || b != isTrue {
			t.Fatalf("%q read as %t", s, b)
		}
		if again, err := protocol.ParseWriteForbidden(protocol.FormatBool(b)); err != nil || again != b {
			t.Fatalf("FormatBool(%t) reads back as %t, %v", b, again, err)
		}
	})
}
