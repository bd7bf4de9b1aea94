package manifest_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/replayctl/replayctl/manifest"
)

// sealedJSON is a valid, sealed manifest as plan writes it.
func sealedJSON(t *testing.T) string {
	t.Helper()
	m := validManifest(t, 3)
	if err := manifest.Seal(m); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := manifest.Encode(&buf, m); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// TestDecodeHugeValues holds the FuzzDecode seeds too large for testdata: 10 MB strings and
// numbers where a manifest has short ones. Each is refused with ErrInvalid, and the error quotes
// at most a clipped prefix: an operator's terminal and a CI log never receive the 10 MB back.
func TestDecodeHugeValues(t *testing.T) {
	huge := strings.Repeat("a", 10<<20)
	for _, tc := range []struct{ name, old, new, want string }{
		{"event ID", `"eventIds": [`, `"eventIds": ["` + huge + `", `, "eventIds[0]: event ID"},
		{"reason", `"reason": "`, `"reason": "` + huge, "digest mismatch"},
		{"unknown field", `"reason": `, `"` + huge + `": 1, "reason": `, "unknown field"},
		{"number", `"scanned": `, `"scanned": 1` + strings.Repeat("0", 10<<20) + `, "x": `, "stats.scanned: cannot use a JSON number"},
		{"consumer", `"consumer": "`, `"consumer": "` + huge, "consumer: consumer name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := strings.Replace(sealedJSON(t), tc.old, tc.new, 1)
			_, err := manifest.Decode(strings.NewReader(data))
			if !errors.Is(err, manifest.ErrInvalid) {
				t.Fatalf("Decode of a 10 MB %s: %v, want ErrInvalid", tc.name, err)
			}
			if msg := err.Error(); len(msg) > 2048 || !strings.Contains(msg, tc.want) {
				t.Fatalf("error is %d bytes, want at most 2048 containing %q: %.300s", len(msg), tc.want, msg)
			}
		})
	}
}

// TestDecodeRefusesDuplicateKeys covers what the digest cannot: a key inserted before the sealed
// one leaves the decoded manifest, and so the digest, unchanged.
func TestDecodeRefusesDuplicateKeys(t *testing.T) {
	sealed := sealedJSON(t)
	if _, err := manifest.Decode(strings.NewReader(sealed)); err != nil {
		t.Fatalf("the sealed manifest itself: %v", err)
	}
	for _, tc := range []struct{ name, old, new, key string }{
		{"top level", `"writeForbidden": false`, `"writeForbidden": true, "writeForbidden": false`, "writeForbidden"},
		{"escaped spelling", `"consumer": `, `"cons\u0075mer": "shipping", "consumer": `, "consumer"},
		{"nested", `"stream": `, `"stream": "OTHER", "stream": `, "stream"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := strings.Replace(sealed, tc.old, tc.new, 1)
			if data == sealed {
				t.Fatalf("the manifest has no %q", tc.old)
			}
			_, err := manifest.Decode(strings.NewReader(data))
			if !errors.Is(err, manifest.ErrMalformed) || errors.Is(err, manifest.ErrTampered) {
				t.Fatalf("Decode: %v, want ErrMalformed (the digest still matches)", err)
			}
			if !strings.Contains(err.Error(), `key "`+tc.key+`" appears twice`) || !strings.Contains(err.Error(), "line ") {
				t.Fatalf("error does not name the key and its line: %v", err)
			}
		})
	}
}
