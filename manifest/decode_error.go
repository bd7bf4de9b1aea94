package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/replayctl/replayctl/internal/clip"
)

// decodeError turns an encoding/json error on data into an ErrMalformed (or, for a file from
// another schema version, ErrUnsupportedVersion) error with a line and column where json gives one.
// m is the partly decoded manifest: json keeps decoding after an unknown field.
func decodeError(data []byte, m *Manifest, err error) error {
	var (
		syntaxErr *json.SyntaxError
		typeErr   *json.UnmarshalTypeError
	)
	switch {
	case errors.Is(err, io.EOF):
		return fmt.Errorf("%w: the file is empty; expected a JSON object", ErrMalformed)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("%w: the JSON ends before the manifest is complete (truncated file?)", ErrMalformed)
	case errors.As(err, &syntaxErr):
		return fmt.Errorf("%w: %s: %v", ErrMalformed, position(data, syntaxErr.Offset-1), syntaxErr)
	case errors.As(err, &typeErr):
		return fmt.Errorf("%w: %s: %s: cannot use a JSON %s as %s", ErrMalformed,
			position(data, typeErr.Offset-1), clip.Bytes(typeErr.Field, maxQuoted), clip.Bytes(typeErr.Value, maxQuoted), typeErr.Type)
	}
	if quoted, ok := strings.CutPrefix(err.Error(), unknownFieldPrefix); ok {
		if m.APIVersion != APIVersion && m.APIVersion != "" {
			return unsupportedVersion(m.APIVersion)
		}
		name, uerr := strconv.Unquote(quoted)
		if uerr != nil {
			name = quoted
		}
		return fmt.Errorf("%w: unknown field %q: %s has no such field", ErrMalformed, clip.Bytes(name, maxQuoted), APIVersion)
	}
	return fmt.Errorf("%w: %s", ErrMalformed, clip.Bytes(err.Error(), maxQuoted))
}

// unknownFieldPrefix starts encoding/json's unknown-field error. A prefix match, not a regular
// expression over the message: the message repeats the field's name, which may be megabytes long.
const unknownFieldPrefix = "json: unknown field "

func isUnknownField(err error) bool { return strings.HasPrefix(err.Error(), unknownFieldPrefix) }

func unsupportedVersion(found string) error {
	if found == "" {
		return fmt.Errorf("%w: the file has no apiVersion; this build reads %s", ErrUnsupportedVersion, APIVersion)
	}
	return fmt.Errorf("%w: found %q; this build reads %s", ErrUnsupportedVersion, clip.Bytes(found, maxQuoted), APIVersion)
}

// position returns "line L, column C" (1-based, column in bytes) of data[offset].
func position(data []byte, offset int64) string {
	offset = max(0, min(offset, int64(len(data))))
	before := data[:offset]
	line := bytes.Count(before, []byte{'\n'}) + 1
	col := len(before) - bytes.LastIndexByte(before, '\n')
	return fmt.Sprintf("line %d, column %d", line, col)
}
