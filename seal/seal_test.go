package seal_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/replayctl/replayctl/seal"
)

func TestRotatedKeyringSealsWithTheNewestAndOpensTheOlder(t *testing.T) {
	oldLine := seal.NewKeyLine("2026-11")
	old, err := seal.ParseKeyring([]byte(oldLine + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	oldID, oldSealed := old.Seal([]byte(`{"amountCents":1250}`), []byte("row-1"))

	// The operator appends a new key to the same file: the old line stays so older rows open.
	file := "# keyring\n" + oldLine + "\n" + seal.NewKeyLine("2026-12") + "\n"
	rotated, err := seal.ParseKeyring([]byte(file))
	if err != nil {
		t.Fatal(err)
	}
	id, sealed := rotated.Seal([]byte("new body"), []byte("row-2"))
	if id != "2026-12" || rotated.NewestKeyID() != "2026-12" {
		t.Fatalf("new seals use key %q, want the newest 2026-12", id)
	}
	if plain, err := rotated.Open(oldID, oldSealed, []byte("row-1")); err != nil || string(plain) != `{"amountCents":1250}` {
		t.Fatalf("an old row after rotation: %q, %v", plain, err)
	}
	if plain, err := rotated.Open(id, sealed, []byte("row-2")); err != nil || string(plain) != "new body" {
		t.Fatalf("a new row: %q, %v", plain, err)
	}
	if _, err := old.Open(id, sealed, []byte("row-2")); !errors.Is(err, seal.ErrUnknownKey) {
		t.Fatalf("the old keyring opened a body of the new key: %v", err)
	}
	if bytes.Contains(sealed, []byte("new body")) {
		t.Fatal("the sealed body holds its plaintext")
	}
}

func TestASealedBodyMovedToAnotherRowOrChangedDoesNotOpen(t *testing.T) {
	kr, err := seal.ParseKeyring([]byte(seal.NewKeyLine("k1")))
	if err != nil {
		t.Fatal(err)
	}
	id, sealed := kr.Seal([]byte("body"), []byte("row-1"))
	if _, err := kr.Open(id, sealed, []byte("row-2")); !errors.Is(err, seal.ErrTampered) {
		t.Fatalf("opened under another row: %v", err)
	}
	sealed[len(sealed)-1] ^= 1
	if _, err := kr.Open(id, sealed, []byte("row-1")); !errors.Is(err, seal.ErrTampered) {
		t.Fatalf("opened a changed body: %v", err)
	}
}

func TestABadKeyringFileNamesTheLineNotTheSecret(t *testing.T) {
	_, err := seal.ParseKeyring([]byte("k1 c2VjcmV0\n"))
	if !errors.Is(err, seal.ErrBadKeyring) || !strings.Contains(err.Error(), `"k1" is 6 bytes`) {
		t.Fatalf("err = %v", err)
	}
	if strings.Contains(err.Error(), "c2VjcmV0") {
		t.Fatal("the error prints the key")
	}
}
