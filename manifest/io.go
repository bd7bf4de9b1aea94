package manifest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"unicode/utf8"

	"github.com/replayctl/replayctl/internal/atomicfile"
)

// maxFileSize is the largest manifest file read (512 MiB); a variable so tests can lower it.
var maxFileSize int64 = 512 << 20

// Decode reads one manifest from r, refusing any key that is not exactly a field (names are
// case-sensitive), duplicate keys, trailing data and input over 512 MiB, then checks it with Verify. Every error about the content matches ErrInvalid; an error reading r
// does not.
func Decode(r io.Reader) (*Manifest, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("reading manifest: %w", err)
	}
	return decodeBytes(data)
}

// Load reads and checks the manifest file at path like Decode. Errors start with "manifest <path>: ".
func Load(path string) (*Manifest, error) {
	m, err := load(path)
	if err != nil {
		return nil, fmt.Errorf("manifest %s: %w", path, err)
	}
	return m, nil
}

func load(path string) (*Manifest, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if info.Size() > maxFileSize {
		return nil, tooLarge()
	}
	// One read into a buffer of the file's size: json.Decoder would buffer the whole value anyway,
	// and the bytes give errors a line and column.
	var buf bytes.Buffer
	buf.Grow(int(info.Size()) + bytes.MinRead)
	if _, err := buf.ReadFrom(io.LimitReader(f, maxFileSize+1)); err != nil {
		return nil, fmt.Errorf("reading: %w", err)
	}
	return decodeBytes(buf.Bytes())
}

func decodeBytes(data []byte) (*Manifest, error) {
	if int64(len(data)) > maxFileSize {
		return nil, tooLarge()
	}
	// JSON text is UTF-8 (RFC 8259); encoding/json would replace a bad byte with U+FFFD, turning
	// an event ID into another one, and only the digest would then tell.
	if !utf8.Valid(data) {
		return nil, fmt.Errorf("%w: %s: invalid UTF-8; a manifest is UTF-8 JSON as plan writes it", ErrMalformed, position(data, int64(firstInvalidUTF8(data))))
	}
	if start := skipSpace(data, 0); start < len(data) && data[start] != '{' {
		return nil, fmt.Errorf("%w: %s: expected a JSON object", ErrMalformed, position(data, int64(start)))
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var m Manifest
	decodeErr := dec.Decode(&m)
	// After an unknown field the JSON is known to be valid: checkKeys names the field with its
	// path. A newer schema usually adds fields: then the version is the problem to report.
	if decodeErr != nil && (!isUnknownField(decodeErr) || m.APIVersion != APIVersion && m.APIVersion != "") {
		return nil, decodeError(data, &m, decodeErr)
	}
	if end := skipSpace(data, int(dec.InputOffset())); end < len(data) {
		return nil, fmt.Errorf("%w: %s: trailing data after the manifest object", ErrMalformed, position(data, int64(end)))
	}
	if err := checkKeys(data); err != nil {
		return nil, err
	}
	if decodeErr != nil {
		// encoding/json found a field checkKeys did not: refuse it all the same.
		return nil, decodeError(data, &m, decodeErr)
	}
	if m.APIVersion != APIVersion {
		return nil, unsupportedVersion(m.APIVersion)
	}
	if err := Verify(&m); err != nil {
		return nil, err
	}
	return &m, nil
}

// skipSpace returns the index of the first byte at or after i that is not JSON white space.
func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\r' || data[i] == '\n') {
		i++
	}
	return i
}

func tooLarge() error {
	return fmt.Errorf("%w: the file is larger than the %d MiB limit", ErrMalformed, maxFileSize>>20)
}

// Encode writes m in the file form: JSON indented by two spaces, no HTML escaping, times in UTC,
// a trailing newline. It writes m as it is, sealed or not.
func Encode(w io.Writer, m *Manifest) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(normalized(m)); err != nil {
		return fmt.Errorf("encoding manifest: %w", err)
	}
	return nil
}

// WriteFile atomically replaces path with m in the file form: it writes a temporary file in the
// same directory, syncs it, renames it over path and syncs the directory, so path never holds a
// partial manifest. It refuses a manifest that Verify refuses, unsealed ones included.
func WriteFile(path string, m *Manifest) error {
	if err := Verify(m); err != nil {
		return fmt.Errorf("refusing to write manifest %s: %w", path, err)
	}
	if err := writeFile(path, true, func(w io.Writer) error { return Encode(w, m) }); err != nil {
		return fmt.Errorf("writing manifest %s: %w", path, err)
	}
	return nil
}

// Marshal returns m in the file form (Encode), refusing a manifest that Verify refuses: the bytes
// plan writes to its -o file and stores with the job, so both copies are the same bytes.
func Marshal(m *Manifest) ([]byte, error) {
	if err := Verify(m); err != nil {
		return nil, fmt.Errorf("refusing to encode manifest %s: %w", m.ID, err)
	}
	var buf bytes.Buffer
	if err := Encode(&buf, m); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Parse reads one manifest from data, the file form, and checks it like Decode.
func Parse(data []byte) (*Manifest, error) { return decodeBytes(data) }

// WriteBytes atomically writes data, a manifest in the file form (Marshal's, or the copy stored
// with its job), to path, as WriteFile does. With replace false, a file already at path is
// refused with an error matching fs.ErrExist and left as it was.
func WriteBytes(path string, data []byte, replace bool) error {
	if err := writeFile(path, replace, func(w io.Writer) error { _, err := w.Write(data); return err }); err != nil {
		return fmt.Errorf("writing manifest %s: %w", path, err)
	}
	return nil
}

// writeFile makes the manifest 0644: it holds no secrets and is meant to be reviewed.
func writeFile(path string, replace bool, write func(io.Writer) error) error {
	if replace {
		return atomicfile.Write(path, 0o644, write)
	}
	return atomicfile.WriteNew(path, 0o644, write)
}

// firstInvalidUTF8 returns the offset of data's first byte that is not part of valid UTF-8.
func firstInvalidUTF8(data []byte) int {
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && size == 1 {
			return i
		}
		i += size
	}
	return len(data)
}
