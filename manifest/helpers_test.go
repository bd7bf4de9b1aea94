package manifest_test

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/replayctl/replayctl/manifest"
)

// validManifest returns an unsealed, valid manifest with n targets named evt-0000000, evt-0000001, ...
func validManifest(tb testing.TB, n int) *manifest.Manifest {
	tb.Helper()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("evt-%07d", i)
	}
	since := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	until := time.Date(2025, 3, 2, 12, 30, 0, 5, time.UTC)
	lease := time.Date(2025, 3, 2, 13, 0, 0, 0, time.UTC)
	targets := int64(n)
	return &manifest.Manifest{
		APIVersion: manifest.APIVersion,
		Kind:       manifest.KindManifest,
		ID:         "job-20250302-payments",
		CreatedAt:  time.Date(2025, 3, 2, 14, 0, 0, 123456789, time.UTC),
		CreatedBy:  "alice",
		Reason:     "provider outage INC-4521 fixed; re-run failed charges",
		Ticket:     "INC-4521",
		Consumer:   "payments",
		Source: manifest.Source{
			Stream:        "PAYMENTS_DLQ",
			SubjectFilter: "dlq.payments.>",
			Since:         &since,
			Until:         &until,
			FailureMatch:  "timeout|503",
			Headers: manifest.Headers{
				EventID: "Event-Id", Reason: "Dlq-Reason", OriginalSubject: "Dlq-Original-Subject",
				Attempts: "Dlq-Attempts", FailedAt: "Dlq-Failed-At",
			},
			FirstSeq:      10,
			LastSeq:       10 + uint64(n) + 6,
			StreamLastSeq: 10 + uint64(n) + 20,
		},
		EffectVersion:  manifest.EffectVersion{From: 1, To: 2},
		WriteForbidden: false,
		Stats: manifest.Stats{
			Scanned:          targets + 7,
			MissingEventID:   1,
			Candidates:       targets + 3,
			RepeatedInSource: 2,
			AlreadyCompleted: 1,
			// Figures only need to be consistent, not realistic.
			AlreadyCompletedRatio: 0.25,
			ExcludedUncertain:     1,
			ExcludedInFlight:      1,
			DuplicateInSource:     1,
			Targets:               targets,
			FailureReasons:        map[string]int64{"timeout": targets - targets/2, "provider <503>": targets / 2},
		},
		ExpectedExternalCalls: targets * 2,
		ExternalCallsEstimate: manifest.CallsEstimate{
			Method: "ledger-effect-count", KnownTargets: targets / 2, KnownCalls: targets,
			EstimatedTargets: targets - targets/2, MeanPerEffect: 1.5, SampleSize: 40,
		},
		Excluded: manifest.Excluded{
			Uncertain: []manifest.LedgerExclusion{{EventID: "evt-x-uncertain", EffectVersion: 1, State: "uncertain"}},
			InFlight: []manifest.LedgerExclusion{{EventID: "evt-x-inflight", EffectVersion: 1, State: "processing",
				LeaseOwner: "payments-7f9c", LeaseExpiresAt: &lease}},
			Conflicts:          []manifest.Conflict{{EventID: "evt-x-conflict", Where: "source", PayloadHashes: []string{"sha256:aa", "sha256:bb"}}},
			MissingEventIDSeqs: []uint64{12},
		},
		EventIDs: ids,
	}
}

// sealed returns validManifest(n) with its digest set.
func sealed(tb testing.TB, n int) *manifest.Manifest {
	tb.Helper()
	m := validManifest(tb, n)
	if err := manifest.Seal(m); err != nil {
		tb.Fatalf("Seal: %v", err)
	}
	return m
}

// fileForm returns m encoded as a manifest file.
func fileForm(tb testing.TB, m *manifest.Manifest) []byte {
	tb.Helper()
	var buf bytes.Buffer
	if err := manifest.Encode(&buf, m); err != nil {
		tb.Fatalf("Encode: %v", err)
	}
	return buf.Bytes()
}

// fieldsOf returns the Field of every problem in a *manifest.ValidationError, failing otherwise.
func fieldsOf(tb testing.TB, err error) []string {
	tb.Helper()
	ve, ok := err.(*manifest.ValidationError)
	if !ok {
		tb.Fatalf("error is %T (%v), want *manifest.ValidationError", err, err)
	}
	fields := make([]string, len(ve.Errors))
	for i, fe := range ve.Errors {
		fields[i] = fe.Field
	}
	return fields
}
