package seal

import (
	"encoding/json"
	"errors"
	"os"
	"testing"
)

// testdata/sealed-json.json is a body this package sealed, which SDKs in other languages open in
// their tests (sdk/typescript/test/seal.test.ts): if the format or the row binding changed here,
// they would no longer agree with it, so it must still open, and only for its own row.
func TestTheSharedSealedVectorOpens(t *testing.T) {
	raw, err := os.ReadFile("testdata/sealed-json.json")
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Keyring, Consumer, EventID, Plaintext string
		EffectVersion                         int
		Sealed                                json.RawMessage
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	kr, err := ParseKeyring([]byte(v.Keyring))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := kr.OpenJSON(v.Sealed, ResultContext(v.Consumer, v.EventID, v.EffectVersion))
	if err != nil || string(plain) != v.Plaintext {
		t.Fatalf("the shared sealed body opens to %q, %v; want %q", plain, err, v.Plaintext)
	}
	if _, err := kr.OpenJSON(v.Sealed, ResultContext(v.Consumer, v.EventID, v.EffectVersion+1)); !errors.Is(err, ErrTampered) {
		t.Fatalf("the shared sealed body opened for another row: %v", err)
	}
}
