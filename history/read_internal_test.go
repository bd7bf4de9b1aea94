package history

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// A CSV row and a JSON line with the same values read as the same Record, field by field: the
// CSV reader sets fields through the names Record's JSON tags give (fieldNames), so a field added
// to Record is read from both formats or from neither.
func TestACSVRowReadsLikeTheJSONLineOfTheSameValues(t *testing.T) {
	t.Parallel()
	const jsonLine = `{"eventId":"evt-1","consumer":"billing","effectVersion":2,"state":"completed","outcome":"business",` +
		`"processedAt":"2026-01-02T03:04:05Z","requestHash":"sha256:aa","requestHashAlg":"canonical-json-v1","resultHash":"sha256:bb",` +
		`"effectCount":3,"replayUntil":"2026-02-01T00:00:00Z","evidenceUntil":"2027-01-01T00:00:00Z"}` + "\n"
	const csvFile = "eventId,consumer,effectVersion,state,outcome,processedAt,requestHash,requestHashAlg,resultHash,effectCount,replayUntil,evidenceUntil\n" +
		"evt-1,billing,2,completed,business,2026-01-02T03:04:05Z,sha256:aa,canonical-json-v1,sha256:bb,3,2026-02-01T00:00:00Z,2027-01-01T00:00:00Z\n"
	read := func(format, text string) Record {
		t.Helper()
		lr, err := newLineReader(format, strings.NewReader(text))
		if err != nil {
			t.Fatal(err)
		}
		_, r, err := lr.next()
		if err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		return r
	}
	fromJSON, fromCSV := read(FormatJSONLines, jsonLine), read(FormatCSV, csvFile)
	if !reflect.DeepEqual(fromJSON, fromCSV) {
		t.Fatalf("JSON line %+v\nCSV row   %+v", fromJSON, fromCSV)
	}
	if len(fieldNames) != reflect.TypeFor[Record]().NumField() || strings.Join(fieldNames, ",")+"\n" != strings.SplitAfter(csvFile, "\n")[0] {
		t.Fatalf("fieldNames %v do not name every Record field in order", fieldNames)
	}

	lr, err := newLineReader(FormatCSV, strings.NewReader("eventId,processedAt,effectCount\nevt-1,2026-01-01,three\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = lr.next()
	var le *LineError
	if !errors.As(err, &le) || le.Line != 2 || le.Field != "effectCount" || !strings.Contains(le.Problem, "not a whole number") {
		t.Fatalf("a word for a number: %v, want line 2, field effectCount, not a whole number", err)
	}
}
