// Package history imports the processed-event history a team kept before replayctl (a
// processed-events table, a Redis set, an old dedup table) into the ledger, so that a replay on
// day one finds those events done instead of planning them as targets. See docs/ledger.md,
// "Importing history".
package history

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"time"
)

// Record is one line of an import file, JSON lines or CSV with these names as its header. Only
// EventID and ProcessedAt are required; the rest have defaults written in docs/ledger.md.
type Record struct {
	EventID       string `json:"eventId"`
	Consumer      string `json:"consumer,omitempty"`
	EffectVersion *int   `json:"effectVersion,omitempty"`
	// State is completed (the default: the effect happened) or uncertain (the old system does not
	// know; the row goes to review and is never replayed automatically).
	State string `json:"state,omitempty"`
	// Outcome is success (the default) or business-failure, for a completed row.
	Outcome        string `json:"outcome,omitempty"`
	ProcessedAt    string `json:"processedAt"`
	RequestHash    string `json:"requestHash,omitempty"`
	RequestHashAlg string `json:"requestHashAlg,omitempty"`
	ResultHash     string `json:"resultHash,omitempty"`
	EffectCount    *int   `json:"effectCount,omitempty"`
	ReplayUntil    string `json:"replayUntil,omitempty"`
	EvidenceUntil  string `json:"evidenceUntil,omitempty"`
}

// fieldNames are the names a CSV header and a JSON line may use, in the order of Record: its
// fields' JSON names, read off the struct so a new field needs no second list (setField sets a CSV
// cell through the same names).
var fieldNames = func() []string {
	t := reflect.TypeFor[Record]()
	names := make([]string, t.NumField())
	for i := range names {
		names[i], _, _ = strings.Cut(t.Field(i).Tag.Get("json"), ",")
	}
	return names
}()

// LineError is a line of the file that cannot be imported: its number (from 1, the CSV header
// included), the field, and what is wrong with it.
type LineError struct {
	Line    int64  `json:"line"`
	Field   string `json:"field,omitempty"`
	Problem string `json:"problem"`
}

// Error names the line, the field and the problem, as the import prints them.
func (e LineError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("line %d: %s", e.Line, e.Problem)
	}
	return fmt.Sprintf("line %d, field %s: %s", e.Line, e.Field, e.Problem)
}

var sha256Hash = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// maxEventIDBytes is the longest event ID the import takes: the ledger's rows are keyed by it, and
// an ID past this is a column mix-up (a payload pasted into the ID), not an ID.
const maxEventIDBytes = 512

// parseTime reads an RFC 3339 time, or a date as midnight UTC.
func parseTime(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("%q is not an RFC 3339 time (2026-11-30T14:05:00Z) or a date (2026-11-30)", s)
}

// unknownFieldHint names the field a JSON decoder refused and the nearest accepted name, for the
// snake_case spellings an exported table brings (event_id for eventId).
func unknownFieldHint(field string) string {
	squashed := strings.ReplaceAll(strings.ToLower(field), "_", "")
	for _, n := range fieldNames {
		if strings.ToLower(n) == squashed {
			return fmt.Sprintf("unknown field %q: did you mean %q? (fields: %s)", field, n, strings.Join(fieldNames, ", "))
		}
	}
	return fmt.Sprintf("unknown field %q (fields: %s)", field, strings.Join(fieldNames, ", "))
}

// decodeJSONLine reads one JSON line into a Record, refusing unknown fields so a misspelt column
// is not silently dropped.
func decodeJSONLine(line []byte) (Record, string, error) {
	var r Record
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		msg := err.Error()
		if field, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
			return r, strings.Trim(field, `"`), fmt.Errorf("%s", unknownFieldHint(strings.Trim(field, `"`)))
		}
		if te, ok := err.(*json.UnmarshalTypeError); ok {
			return r, te.Field, fmt.Errorf("is %s, want %s", te.Value, te.Type)
		}
		return r, "", fmt.Errorf("not a JSON object: %v", err)
	}
	if dec.More() {
		return r, "", fmt.Errorf("more than one JSON value on the line")
	}
	return r, "", nil
}
