package manifest_test

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/replayctl/replayctl/manifest"
)

func TestValidateAcceptsValid(t *testing.T) {
	for _, n := range []int{0, 1, 100} {
		if err := manifest.Validate(validManifest(t, n)); err != nil {
			t.Errorf("Validate(%d targets): %v", n, err)
		}
	}
}

func TestValidateReportsField(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(m *manifest.Manifest)
		field   string
		problem string
	}{
		{"apiVersion", func(m *manifest.Manifest) { m.APIVersion = "v1" }, "apiVersion", `must be "replayctl/v1", found "v1"`},
		{"id with space", func(m *manifest.Manifest) { m.ID = "job 1" }, "jobId", `job ID "job 1" is not allowed`},
		{"id leading dot", func(m *manifest.Manifest) { m.ID = ".job" }, "jobId", `job ID ".job" is not allowed`},
		{"id too long", func(m *manifest.Manifest) { m.ID = strings.Repeat("j", 129) }, "jobId", "use 1-128 characters"},
		{"createdAt", func(m *manifest.Manifest) { m.CreatedAt = time.Time{} }, "createdAt", "is missing"},
		{"createdAt year", func(m *manifest.Manifest) {
			m.CreatedAt = time.Date(0, 1, 1, 0, 0, 0, 0, time.FixedZone("x", 3600))
		}, "createdAt", "has year -1 in UTC"},
		{"createdBy", func(m *manifest.Manifest) { m.CreatedBy = "  " }, "createdBy", "is missing"},
		{"reason", func(m *manifest.Manifest) { m.Reason = "fix" }, "reason", "must say why the replay is needed"},
		{"consumer", func(m *manifest.Manifest) { m.Consumer = "pay.ments" }, "consumer",
			`consumer name "pay.ments" is not allowed: use 1-64 characters from A-Z a-z 0-9 _ -`},
		{"stream", func(m *manifest.Manifest) { m.Source.Stream = "DLQ>" }, "source.stream", `stream name "DLQ>" is not allowed`},
		{"until before since", func(m *manifest.Manifest) { *m.Source.Until = m.Source.Since.Add(-time.Second) },
			"source.until", "is 2025-02-28T23:59:59Z; it must be after source.since (2025-03-01T00:00:00Z)"},
		{"failureMatch", func(m *manifest.Manifest) { m.Source.FailureMatch = "time(out" }, "source.failureMatch", "not a valid regular expression"},
		{"max", func(m *manifest.Manifest) { m.Source.Max = -1 }, "source.max", "is -1; use 0 for no limit"},
		{"over max", func(m *manifest.Manifest) { m.Source.Max = 3 }, "eventIds", "has 4 entries, more than source.max (3)"},
		{"header with colon", func(m *manifest.Manifest) { m.Source.Headers.Reason = "Dlq:Reason" }, "source.headers.reason",
			`header name "Dlq:Reason" is not allowed: use printable ASCII without ':' or spaces`},
		{"header with space", func(m *manifest.Manifest) { m.Source.Headers.FailedAt = "Failed At" }, "source.headers.failedAt", "is not allowed"},
		{"header empty", func(m *manifest.Manifest) { m.Source.Headers.EventID = "" }, "source.headers.eventId", "header name is empty"},
		{"header non-ASCII", func(m *manifest.Manifest) { m.Source.Headers.Attempts = "Versuche-ä" }, "source.headers.attempts", "is not allowed"},
		{"lastSeq before firstSeq", func(m *manifest.Manifest) { m.Source.FirstSeq = 100 }, "source.lastSeq", "before source.firstSeq (100)"},
		{"lastSeq after stream", func(m *manifest.Manifest) { m.Source.StreamLastSeq = 11 }, "source.lastSeq", "after source.streamLastSeq (11)"},
		{"from negative", func(m *manifest.Manifest) { m.EffectVersion = manifest.EffectVersion{From: -1, To: 1} }, "effectVersion.from", "is -1"},
		{"to above the ledger's integer", func(m *manifest.Manifest) { m.EffectVersion.To = 1 << 31 }, "effectVersion.to",
			"is 2147483648; the ledger stores versions up to 2147483647"},
		{"to not above from", func(m *manifest.Manifest) { m.EffectVersion.To = 1 }, "effectVersion.to",
			"is 1; it must be greater than effectVersion.from (1)"},
		{"negative stat", func(m *manifest.Manifest) { m.Stats.OverMax = -2 }, "stats.overMax", "is -2; counts cannot be negative"},
		{"negative estimate", func(m *manifest.Manifest) { m.ExternalCallsEstimate.KnownCalls = -1 }, "externalCallsEstimate.knownCalls", "cannot be negative"},
		{"ratio", func(m *manifest.Manifest) { m.Stats.AlreadyCompletedRatio = 1.5 }, "stats.alreadyCompletedRatio", "is 1.5; it must be between 0 and 1"},
		{"ratio NaN", func(m *manifest.Manifest) { m.Stats.AlreadyCompletedRatio = math.NaN() }, "stats.alreadyCompletedRatio", "is NaN"},
		{"reasons sum", func(m *manifest.Manifest) { m.Stats.FailureReasons["timeout"]++ }, "stats.failureReasons",
			"counts add up to 5; they must add up to the 4 targets"},
		{"expected calls", func(m *manifest.Manifest) { m.ExpectedExternalCalls = -1 }, "expectedExternalCalls", "cannot be negative"},
		{"estimate targets", func(m *manifest.Manifest) { m.ExternalCallsEstimate.KnownTargets = 0 }, "externalCallsEstimate",
			"knownTargets (0) + estimatedTargets (2) must equal the 4 targets"},
		{"mean per effect", func(m *manifest.Manifest) { m.ExternalCallsEstimate.MeanPerEffect = math.Inf(1) }, "externalCallsEstimate.meanPerEffect", "finite"},
		{"conflict where", func(m *manifest.Manifest) { m.Excluded.Conflicts[0].Where = "dlq" }, "excluded.conflicts[0].where",
			`must be "source" or "ledger", found "dlq"`},
		{"excluded ID", func(m *manifest.Manifest) { m.Excluded.InFlight[0].EventID = " evt" }, "excluded.inFlight[0].eventId",
			`event ID " evt" has leading or trailing white space`},
		{"excluded and targeted", func(m *manifest.Manifest) { m.Excluded.Uncertain[0].EventID = "evt-0000002" }, "excluded.uncertain[0].eventId",
			"is also in eventIds; an excluded event must not be replayed"},
		{"too many seqs", func(m *manifest.Manifest) { m.Excluded.MissingEventIDSeqs = make([]uint64, manifest.MaxListedSeqs+1) },
			"excluded.missingEventIdSeqs", "lists 1001 sequences; the limit is 1000"},
		{"unsorted", func(m *manifest.Manifest) { m.EventIDs[1], m.EventIDs[2] = m.EventIDs[2], m.EventIDs[1] }, "eventIds[2]",
			`not sorted: "evt-0000001" sorts before eventIds[1] ("evt-0000002"); targets must be in ascending byte order`},
		{"duplicate", func(m *manifest.Manifest) { m.EventIDs[3] = m.EventIDs[2] }, "eventIds[3]",
			`duplicate of eventIds[2] ("evt-0000002"); targets must be unique`},
		{"invalid UTF-8", func(m *manifest.Manifest) { m.EventIDs[1] = "evt-0000001\xff" }, "eventIds[1]",
			`event ID "evt-0000001\xff" is not valid UTF-8`},
		{"control character", func(m *manifest.Manifest) { m.EventIDs[1] = "evt-0000001\x00" }, "eventIds[1]",
			"contains the control character U+0000"},
		{"empty ID", func(m *manifest.Manifest) { m.EventIDs[0] = "" }, "eventIds[0]", "event ID is empty"},
		{"long ID", func(m *manifest.Manifest) { m.EventIDs[3] = "evt-0000003" + strings.Repeat("x", 250) }, "eventIds[3]",
			"is 261 bytes; the limit is 256"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := validManifest(t, 4)
			tt.mutate(m)
			err := manifest.Validate(m)
			if !errors.Is(err, manifest.ErrInvalid) {
				t.Fatalf("Validate error = %v, want one matching ErrInvalid", err)
			}
			ve := err.(*manifest.ValidationError)
			if len(ve.Errors) != 1 || ve.Omitted != 0 {
				t.Fatalf("Validate found %d problems (%d omitted), want exactly one: %v", len(ve.Errors), ve.Omitted, err)
			}
			got := ve.Errors[0]
			if got.Field != tt.field || !strings.Contains(got.Problem, tt.problem) {
				t.Errorf("problem = %s\nwant field %s with %q", got, tt.field, tt.problem)
			}
		})
	}
}

func TestValidateListsEveryProblem(t *testing.T) {
	m := validManifest(t, 4)
	m.Reason = "test"
	m.Consumer = ""
	m.EventIDs[2] = "evt-0000001"
	err := manifest.Validate(m)
	want := []string{"reason", "consumer", "eventIds[2]"}
	if got := fieldsOf(t, err); !reflect.DeepEqual(got, want) {
		t.Errorf("problem fields = %q, want %q", got, want)
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "manifest is invalid: reason: must say why the replay is needed and what changed, e.g. "+
		"'provider outage INC-4521 fixed; re-run failed charges'; \"test\" is a placeholder; consumer: ") {
		t.Errorf("Error() = %s", msg)
	}
	if !strings.HasSuffix(msg, "; eventIds[2]: duplicate of eventIds[1] (\"evt-0000001\"); targets must be unique") {
		t.Errorf("Error() = %s", msg)
	}
}

func TestValidateCapsTheList(t *testing.T) {
	m := validManifest(t, 1000)
	for i := range m.EventIDs {
		m.EventIDs[i] = fmt.Sprintf("evt-%07d ", i)
	}
	err := manifest.Validate(m)
	ve, ok := err.(*manifest.ValidationError)
	if !ok {
		t.Fatalf("Validate error = %v, want *ValidationError", err)
	}
	if len(ve.Errors) != 20 || ve.Omitted != 980 {
		t.Fatalf("Validate listed %d problems and omitted %d, want 20 and 980", len(ve.Errors), ve.Omitted)
	}
	if ve.Errors[19].Field != "eventIds[19]" {
		t.Errorf("last listed problem is %s, want eventIds[19]", ve.Errors[19].Field)
	}
	if !strings.HasSuffix(err.Error(), "; ... and 980 more") {
		t.Errorf("Error() does not end with the omitted count: ...%s", err.Error()[len(err.Error())-60:])
	}
}

func TestValidateIgnoresDigest(t *testing.T) {
	m := validManifest(t, 2)
	m.Digest = "sha256:wrong"
	if err := manifest.Validate(m); err != nil {
		t.Errorf("Validate checked the digest: %v", err)
	}
}
