package shadow_test

import (
	"testing"

	"github.com/replayctl/replayctl/seal"
	"github.com/replayctl/replayctl/shadow"
)

// sealOriginals replaces the stored bodies of ids with the SDK's sealed form under kr.
func (f *fixture) sealOriginals(kr *seal.Keyring, ids ...string) {
	f.t.Helper()
	for _, id := range ids {
		var body []byte
		if err := f.db.QueryRow(f.ctx, `select result_body::text from effects where event_id = $1 and effect_version = 1`, id).Scan(&body); err != nil {
			f.t.Fatal(err)
		}
		f.exec(`update effects set result_body = $2 where event_id = $1 and effect_version = 1`, id, string(kr.SealJSON(body, seal.ResultContext("billing", id, 1))))
	}
}

func TestSealedOriginalsOpenWithTheKeyringAndAreComparedOnTheirHashesWithoutIt(t *testing.T) {
	t.Parallel()
	kr, err := seal.ParseKeyring([]byte(seal.NewKeyLine("k1")))
	if err != nil {
		t.Fatal(err)
	}
	for _, withKeyring := range []bool{true, false} {
		f, m := standardJob(t)
		f.sealOriginals(kr, "e01", "e02", "e03", "e04")
		f.serve(behaviour{})
		r := f.mustRun(f.options(m, func(o *shadow.Options) {
			if withKeyring {
				o.Keyring = kr
			}
		}))
		tot := r.Totals
		// Opened, e01 and e03 are identical once processedAt is measured as noise; closed, only
		// hashes compare, and a hash cannot leave noise out (as for a pruned body).
		wantIdentical, wantHash, wantClosed := int64(3), int64(2), int64(0)
		if !withKeyring {
			wantIdentical, wantHash, wantClosed = 1, 6, 4
		}
		if tot.Identical != wantIdentical || tot.Identical+tot.Changed != 6 {
			t.Fatalf("keyring %t: identical %d, changed %d; want %d identical of 6", withKeyring, tot.Identical, tot.Changed, wantIdentical)
		}
		if tot.ComparedOnHash != wantHash || tot.SealedNotOpened != wantClosed {
			t.Fatalf("keyring %t: comparedOnHash %d, sealedNotOpened %d; want %d and %d", withKeyring, tot.ComparedOnHash, tot.SealedNotOpened, wantHash, wantClosed)
		}
		// Opened, the bodies are diffed field by field: the sample names changed fields.
		if withKeyring && len(r.Fields) == 0 {
			t.Fatal("no field summary: the opened bodies were not diffed")
		}
	}
}
