package manifest_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/replayctl/replayctl/manifest"
)

func TestDecodeRefusesMalformed(t *testing.T) {
	valid := string(fileForm(t, sealed(t, 3)))
	tests := []struct {
		name, in, want string
	}{
		{"empty", "", "malformed manifest: the file is empty; expected a JSON object"},
		{"not an object", "[1]", "malformed manifest: line 1, column 1: expected a JSON object"},
		{"truncated", valid[:len(valid)/2], "malformed manifest: the JSON ends before the manifest is complete (truncated file?)"},
		{"syntax", "{\n  \"jobId\": \"x\",\n  oops\n}",
			"malformed manifest: line 3, column 3: invalid character 'o' looking for beginning of object key string"},
		{"wrong type", "{\n  \"jobId\": 5\n}", "malformed manifest: line 2, column 12: jobId: cannot use a JSON number as string"},
		{"unknown top-level field", strings.Replace(valid, "{\n", "{\n  \"approvedBy\": \"bob\",\n", 1),
			"malformed manifest: line 2, column 3: unknown field \"approvedBy\" in $: replayctl/v1 has no such field; re-run `replayctl plan` instead of editing the file"},
		{"unknown nested field", strings.Replace(valid, `"stream": "PAYMENTS_DLQ",`, `"stream": "PAYMENTS_DLQ", "replicas": 3,`, 1),
			"malformed manifest: line 11, column 31: unknown field \"replicas\" in $.source: replayctl/v1 has no such field; re-run `replayctl plan` instead of editing the file"},
		{"a file from before the JSON contract", strings.Replace(valid, `"jobId"`, `"id"`, 1),
			"malformed manifest: line 4, column 3: unknown field \"id\" in $: replayctl/v1 has no such field; the file was written by a replayctl " +
				"from before the JSON contract renamed it to \"jobId\" (docs/contract.md); re-run `replayctl plan` instead of editing the file"},
		{"trailing object", valid + "{}\n", "malformed manifest: line 101, column 1: trailing data after the manifest object"},
		{"trailing garbage", strings.TrimSuffix(valid, "\n") + " x", "malformed manifest: line 100, column 3: trailing data after the manifest object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := manifest.Decode(strings.NewReader(tt.in))
			if !errors.Is(err, manifest.ErrMalformed) || !errors.Is(err, manifest.ErrInvalid) {
				t.Fatalf("Decode error = %v, want ErrMalformed matching ErrInvalid", err)
			}
			if errors.Is(err, manifest.ErrTampered) || errors.Is(err, manifest.ErrUnsupportedVersion) {
				t.Errorf("Decode error %v also matches another kind", err)
			}
			if err.Error() != tt.want {
				t.Errorf("Decode error =\n%s\nwant\n%s", err, tt.want)
			}
		})
	}
}

// TestDecodeRefusesCaseVariantKeys adds, beside a real field, a key encoding/json would take for it
// (it folds case, Unicode included) at each level of the manifest. Whichever value json would keep,
// the file is refused naming the key and where it is: a reviewer reads one value, replayctl would
// use the other.
func TestDecodeRefusesCaseVariantKeys(t *testing.T) {
	valid := string(fileForm(t, sealed(t, 3)))
	tests := []struct{ name, old, new, key, path, field string }{
		{"top level before", `"writeForbidden": false`, `"WriteForbidden": true, "writeForbidden": false`, "WriteForbidden", "$", "writeForbidden"},
		{"top level after", `"writeForbidden": false`, `"writeForbidden": false, "WriteForbidden": true`, "WriteForbidden", "$", "writeForbidden"},
		{"target list", `"eventIds": [`, `"EventIds": ["evt-00001"], "eventIds": [`, "EventIds", "$", "eventIds"},
		{"upper case", `"eventIds": [`, `"EVENTIDS": ["evt-00001"], "eventIds": [`, "EVENTIDS", "$", "eventIds"},
		{"long s (U+017F)", `"reason": "provider`, `"reaſon": "a reason nobody reviewed", "reason": "provider`, "reaſon", "$", "reason"},
		{"escaped", `"reason": "provider`, `"Re\u0061son": "a reason nobody reviewed", "reason": "provider`, "Reason", "$", "reason"},
		{"nested object", `"reason": "Dlq-Reason"`, `"Reason": "Event-Id", "reason": "Dlq-Reason"`, "Reason", "$.source.headers", "reason"},
		{"array element", `"where": "source"`, `"Where": "ledger", "where": "source"`, "Where", "$.excluded.conflicts[0]", "where"},
		{"another list", `"eventId": "evt-x-inflight"`, `"eventID": "evt-y", "eventId": "evt-x-inflight"`, "eventID", "$.excluded.inFlight[0]", "eventId"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !strings.Contains(valid, tt.old) {
				t.Fatalf("the file form has no %s", tt.old)
			}
			_, err := manifest.Decode(strings.NewReader(strings.Replace(valid, tt.old, tt.new, 1)))
			if !errors.Is(err, manifest.ErrMalformed) || errors.Is(err, manifest.ErrTampered) {
				t.Fatalf("Decode error = %v, want ErrMalformed", err)
			}
			want := fmt.Sprintf("unknown field %q in %s: replayctl/v1 has no such field; field names are exact and case-sensitive: the field is %q",
				tt.key, tt.path, tt.field)
			if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "re-run `replayctl plan`") {
				t.Errorf("Decode error =\n%s\nwant it to contain\n%s", err, want)
			}
		})
	}
	// Map keys are data, not fields: any failure reason is a key of the histogram.
	m := validManifest(t, 3)
	m.Stats.FailureReasons = map[string]int64{"Timeout": 1, "timeout": 2}
	if err := manifest.Seal(m); err != nil {
		t.Fatal(err)
	}
	if _, err := manifest.Decode(bytes.NewReader(fileForm(t, m))); err != nil {
		t.Errorf("Decode of failure reasons differing in case: %v", err)
	}
}

func TestDecodeRefusesTooLarge(t *testing.T) {
	data := fileForm(t, sealed(t, 3))
	manifest.SetMaxFileSize(t, int64(len(data)-1))
	_, err := manifest.Decode(bytes.NewReader(data))
	if !errors.Is(err, manifest.ErrMalformed) || !strings.Contains(err.Error(), "larger than the") {
		t.Fatalf("Decode of an oversized file: %v, want ErrMalformed saying it is too large", err)
	}
	manifest.SetMaxFileSize(t, int64(len(data)))
	if _, err := manifest.Decode(bytes.NewReader(data)); err != nil {
		t.Fatalf("Decode of a file exactly at the limit: %v", err)
	}
}

func TestDecodeRefusesOtherVersions(t *testing.T) {
	valid := string(fileForm(t, sealed(t, 3)))
	tests := []struct{ name, in, want string }{
		{"v2", strings.Replace(valid, `"replayctl/v1"`, `"replayctl/v2"`, 1),
			`unsupported manifest apiVersion: found "replayctl/v2"; this build reads replayctl/v1`},
		// A newer schema usually adds fields: the version, not the field, is the problem to report.
		{"v2 with a new field", strings.Replace(valid, `"replayctl/v1",`, `"replayctl/v2", "approvals": [],`, 1),
			`unsupported manifest apiVersion: found "replayctl/v2"; this build reads replayctl/v1`},
		{"missing", strings.Replace(valid, `"apiVersion": "replayctl/v1",`, ``, 1),
			`unsupported manifest apiVersion: the file has no apiVersion; this build reads replayctl/v1`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := manifest.Decode(strings.NewReader(tt.in))
			if !errors.Is(err, manifest.ErrUnsupportedVersion) || !errors.Is(err, manifest.ErrInvalid) {
				t.Fatalf("Decode error = %v, want ErrUnsupportedVersion matching ErrInvalid", err)
			}
			if err.Error() != tt.want {
				t.Errorf("Decode error =\n%s\nwant\n%s", err, tt.want)
			}
		})
	}
}

func TestDecodeValidates(t *testing.T) {
	m := validManifest(t, 3)
	m.Consumer = "pay.ments"
	if err := manifest.Seal(m); err != nil {
		t.Fatal(err)
	}
	_, err := manifest.Decode(bytes.NewReader(fileForm(t, m)))
	var ve *manifest.ValidationError
	if !errors.As(err, &ve) || !errors.Is(err, manifest.ErrInvalid) {
		t.Fatalf("Decode error = %v, want a *ValidationError matching ErrInvalid", err)
	}
	if got := fieldsOf(t, ve); len(got) != 1 || got[0] != "consumer" {
		t.Errorf("problem fields = %q, want [consumer]", got)
	}
}

// TestStoredFileStillLoads decodes the valid fuzz seed, a file written by an earlier build: a change
// to the canonical encoding would break every manifest already planned.
func TestStoredFileStillLoads(t *testing.T) {
	raw, err := os.ReadFile("testdata/fuzz/FuzzDecode/valid")
	if err != nil {
		t.Fatal(err)
	}
	_, quoted, _ := strings.Cut(strings.TrimSpace(string(raw)), "\n[]byte(")
	data, err := strconv.Unquote(strings.TrimSuffix(quoted, ")"))
	if err != nil {
		t.Fatalf("seed file: %v", err)
	}
	m, err := manifest.Decode(strings.NewReader(data))
	if err != nil {
		t.Fatalf("Decode of the stored manifest: %v", err)
	}
	const want = "sha256:2c805ce1cd757c47fab589907ff0d2906196c678d3369fecf251145f3c82514c"
	if m.Digest != want || len(m.EventIDs) != 3 {
		t.Errorf("stored manifest has digest %s and %d targets, want %s and 3", m.Digest, len(m.EventIDs), want)
	}
}
