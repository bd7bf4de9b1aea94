package planner

import (
	"fmt"
	"slices"
	"testing"
)

// Every ID seen twice must be a candidate, however full the filter: a repeat the filter missed
// would reach the manifest twice and hide a source conflict. The filter is sized for a tenth of
// the IDs it gets, so its bits fill up and false positives are common.
func TestRepeatFilterListsEveryRepeatedID(t *testing.T) {
	t.Parallel()
	const n = 20_000
	f := newRepeatFilter(n / 10)
	var repeated []string
	for i := range n {
		f.add(fmt.Sprintf("evt-%06d", i))
		if i%97 == 0 {
			id := fmt.Sprintf("evt-%06d", i/2)
			f.add(id)
			repeated = append(repeated, id)
		}
	}
	ids, known := f.candidates()
	if !known {
		t.Fatalf("%d candidates: gave up", len(ids))
	}
	for _, id := range repeated {
		if !slices.Contains(ids, id) {
			t.Fatalf("%s was seen twice but is not a candidate", id)
		}
	}
	if len(ids) != len(slices.Compact(slices.Sorted(slices.Values(ids)))) {
		t.Error("a candidate is listed twice")
	}
}

func TestRepeatFilterOfUniqueIDsHasFewCandidates(t *testing.T) {
	t.Parallel()
	const n = 100_000
	f := newRepeatFilter(n)
	for i := range n {
		f.add(fmt.Sprintf("evt-%06d", i))
	}
	ids, known := f.candidates()
	// About 1 % false positives at 10 bits and 7 probes per ID; 3 % leaves room for chance.
	if !known || len(ids) > n*3/100 {
		t.Errorf("%d candidates among %d unique IDs (known %v)", len(ids), n, known)
	}
}

func TestRepeatFilterGivesUpPastItsBound(t *testing.T) {
	t.Parallel()
	f := newRepeatFilter(1)
	for i := range maxRepeatCandidates + 1 {
		id := fmt.Sprintf("evt-%06d", i)
		f.add(id)
		f.add(id)
	}
	if ids, known := f.candidates(); known || ids != nil {
		t.Errorf("%d candidates past the bound of %d, known %v", len(ids), maxRepeatCandidates, known)
	}
}
