package shadow

import (
	"encoding/json"
	"slices"
	"testing"
)

// FuzzDiffResults feeds the diff arbitrary results, as a broken or hostile responder could send:
// it must never panic, find no difference between a result and itself, and name the same paths
// whichever side is the original.
func FuzzDiffResults(f *testing.F) {
	for _, seed := range [][2]string{
		{`{"feeCents": 12, "lines": [{"sku": "a"}]}`, `{"feeCents": 13, "lines": [{"sku": "b"}, {"sku": "c"}]}`},
		{`[1, 2.0, 3e2]`, `[1.0, 2, 300]`},
		{`{"a": {"b": null}}`, `{"a": {}}`},
		{`"ok"`, `{"status": "ok"}`},
		{`{"n": 123456789012345678901234567890}`, `{"n": 123456789012345678901234567891}`},
	} {
		f.Add([]byte(seed[0]), []byte(seed[1]))
	}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		if !json.Valid(a) || !json.Valid(b) {
			return
		}
		self, err := diffResults(a, a)
		if err != nil || len(self) != 0 {
			t.Fatalf("diff of %q with itself: %v, %v; want none", a, self, err)
		}
		ab, errAB := diffResults(a, b)
		ba, errBA := diffResults(b, a)
		if (errAB == nil) != (errBA == nil) {
			t.Fatalf("diff errors disagree: %v / %v", errAB, errBA)
		}
		paths := func(ds []difference) []string {
			out := make([]string, len(ds))
			for i, d := range ds {
				out[i] = d.path
			}
			return out
		}
		pab, pba := paths(ab), paths(ba)
		if !slices.Equal(pab, pba) {
			t.Fatalf("paths depend on the side: %v vs %v", pab, pba)
		}
		if !slices.IsSorted(pab) || len(slices.Compact(slices.Clone(pab))) != len(pab) {
			t.Fatalf("paths not sorted and unique: %v", pab)
		}
	})
}
