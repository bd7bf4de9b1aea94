package fingerprint_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"testing"

	"github.com/replayctl/replayctl/fingerprint"
)

// vector is one entry of testdata/vectors.json, the file non-Go consumers check themselves with.
type vector struct {
	Name           string               `json:"name"`
	Payload        *string              `json:"payload"`
	PayloadHex     string               `json:"payloadHex"`
	Options        *fingerprint.Options `json:"options"`
	OptionsEncoded string               `json:"optionsEncoded"`
	Algorithm      string               `json:"algorithm"`
	Canonical      *string              `json:"canonical"`
	CanonicalHex   string               `json:"canonicalHex"`
	Hash           string               `json:"hash"`
}

func bytesOf(t *testing.T, text *string, hexText string) []byte {
	t.Helper()
	if text != nil {
		return []byte(*text)
	}
	b, err := hex.DecodeString(hexText)
	if err != nil {
		t.Fatalf("bad hex %q: %v", hexText, err)
	}
	return b
}

func loadVectors(t *testing.T) []vector {
	t.Helper()
	raw, err := os.ReadFile("testdata/vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Vectors []vector `json:"vectors"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("testdata/vectors.json: %v", err)
	}
	if len(doc.Vectors) < 20 {
		t.Fatalf("testdata/vectors.json holds %d vectors; the file was truncated", len(doc.Vectors))
	}
	return doc.Vectors
}

// TestVectors: every published vector must hold for the Go implementation, byte for byte: the
// options encoding, the algorithm name, the canonical bytes and the hash (which must also be the
// SHA-256 of those canonical bytes, so the file is consistent for other implementations).
func TestVectors(t *testing.T) {
	for _, v := range loadVectors(t) {
		t.Run(v.Name, func(t *testing.T) {
			payload, canonical := bytesOf(t, v.Payload, v.PayloadHex), bytesOf(t, v.Canonical, v.CanonicalHex)
			sum := sha256.Sum256(canonical)
			if want := "sha256:" + hex.EncodeToString(sum[:]); v.Hash != want {
				t.Fatalf("the vector's hash %s is not the SHA-256 of its canonical bytes (%s)", v.Hash, want)
			}
			h := fingerprint.V1()
			if v.Options != nil {
				if got := v.Options.Encode(); got != v.OptionsEncoded {
					t.Errorf("options encoding %s, want %s", got, v.OptionsEncoded)
				}
				var err error
				if h, err = fingerprint.New(*v.Options); err != nil {
					t.Fatal(err)
				}
			}
			if h.Algorithm() != v.Algorithm {
				t.Errorf("algorithm %s, want %s", h.Algorithm(), v.Algorithm)
			}
			if got := h.Canonical(payload); string(got) != string(canonical) {
				t.Errorf("canonical %q, want %q", got, canonical)
			}
			if got := h.Sum(payload); got != v.Hash {
				t.Errorf("hash %s, want %s", got, v.Hash)
			}
		})
	}
}
