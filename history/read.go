package history

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// Formats of an import file.
const (
	FormatJSONLines = "jsonl"
	FormatCSV       = "csv"
)

// maxLineBytes bounds one line: an event's history is a few hundred bytes, and a file without
// newlines must fail with its line number instead of filling memory.
const maxLineBytes = 1 << 20

// lineReader yields the file's records one by one with their line numbers; a line that cannot be
// read as a record is a *LineError, an unreadable file another error.
type lineReader interface {
	next() (line int64, r Record, err error)
}

func newLineReader(format string, r io.Reader) (lineReader, error) {
	switch format {
	case FormatJSONLines:
		s := bufio.NewScanner(r)
		s.Buffer(make([]byte, 0, 64<<10), maxLineBytes)
		return &jsonLines{s: s}, nil
	case FormatCSV:
		return newCSVLines(r)
	}
	return nil, fmt.Errorf("format %q: want %s or %s", format, FormatJSONLines, FormatCSV)
}

type jsonLines struct {
	s    *bufio.Scanner
	line int64
	// done is set once the scanner stopped on an error: a Scanner does not resume, so the next
	// call ends the file instead of reporting the same line for ever.
	done bool
}

func (j *jsonLines) next() (int64, Record, error) {
	if j.done {
		return j.line, Record{}, io.EOF
	}
	for j.s.Scan() {
		j.line++
		b := bytes.TrimSpace(j.s.Bytes())
		if j.line == 1 {
			b = bytes.TrimPrefix(b, []byte("\ufeff"))
		}
		if len(b) == 0 {
			continue
		}
		r, field, err := decodeJSONLine(b)
		if err != nil {
			return j.line, r, &LineError{Line: j.line, Field: field, Problem: err.Error()}
		}
		return j.line, r, nil
	}
	if err := j.s.Err(); err != nil {
		j.done = true
		if errors.Is(err, bufio.ErrTooLong) {
			return j.line + 1, Record{}, &LineError{Line: j.line + 1, Problem: fmt.Sprintf("longer than %d bytes: is the file JSON lines (one object per line)?", maxLineBytes)}
		}
		return j.line, Record{}, err
	}
	return j.line, Record{}, io.EOF
}

type csvLines struct {
	r       *csv.Reader
	columns []int // columns[i] is the Record field (index into fieldNames) of column i
}

func newCSVLines(r io.Reader) (*csvLines, error) {
	cr := csv.NewReader(bufio.NewReaderSize(r, 64<<10))
	cr.ReuseRecord = true
	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, &LineError{Line: 1, Problem: "the file is empty: a CSV import starts with a header line naming its columns (" + strings.Join(fieldNames, ",") + ")"}
	}
	if err != nil {
		return nil, &LineError{Line: 1, Problem: err.Error()}
	}
	c := &csvLines{r: cr, columns: make([]int, len(header))}
	seen := map[int]bool{}
	for i, name := range header {
		name = strings.TrimSpace(name)
		if i == 0 {
			name = strings.TrimPrefix(name, "\ufeff")
		}
		idx := slices.Index(fieldNames, name)
		if idx < 0 {
			return nil, &LineError{Line: 1, Field: name, Problem: unknownFieldHint(name)}
		}
		if seen[idx] {
			return nil, &LineError{Line: 1, Field: name, Problem: "the header names this column twice"}
		}
		seen[idx] = true
		c.columns[i] = idx
	}
	for _, required := range []string{"eventId", "processedAt"} {
		if !seen[slices.Index(fieldNames, required)] {
			return nil, &LineError{Line: 1, Field: required, Problem: "the header lacks this required column"}
		}
	}
	return c, nil
}

func (c *csvLines) next() (int64, Record, error) {
	fields, err := c.r.Read()
	line, _ := c.r.FieldPos(0)
	if errors.Is(err, io.EOF) {
		return int64(line), Record{}, io.EOF
	}
	if pe, ok := errors.AsType[*csv.ParseError](err); ok {
		return int64(pe.Line), Record{}, &LineError{Line: int64(pe.Line), Problem: pe.Err.Error()}
	}
	if err != nil {
		return int64(line), Record{}, err
	}
	var r Record
	for i, v := range fields {
		if err := setField(&r, c.columns[i], strings.TrimSpace(v)); err != nil {
			return int64(line), r, &LineError{Line: int64(line), Field: fieldNames[c.columns[i]], Problem: err.Error()}
		}
	}
	return int64(line), r, nil
}

// setField sets one CSV cell into Record field i (the field fieldNames[i] names): a string as it
// is, a number field (*int) from a whole number; an empty cell leaves the field at its default.
func setField(r *Record, i int, v string) error {
	if v == "" {
		return nil
	}
	f := reflect.ValueOf(r).Elem().Field(i)
	if f.Kind() == reflect.String {
		f.SetString(v)
		return nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return fmt.Errorf("%q is not a whole number", v)
	}
	f.Set(reflect.ValueOf(&n))
	return nil
}
