package planner

import (
	"hash/maphash"
	"math/bits"
)

// A DLQ's event IDs are nearly all unique, yet finding the few repeated ones took PostgreSQL a
// hash aggregate over every scanned ID (20 ms of a 20,000-message plan, more than the ledger
// join). The scanner sees every ID anyway, so it keeps a Bloom filter of them: an ID the filter
// has seen before may repeat, and the collapse looks only at those. A Bloom filter has no false
// negatives, so every ID that does repeat is among them; a false positive only costs PostgreSQL a
// look at one more ID, which it finds unique.
const (
	// repeatFilterBitsPerID gives about a 1 % false-positive rate with repeatFilterProbes probes.
	repeatFilterBitsPerID = 10
	repeatFilterProbes    = 7
	// repeatFilterMinBits and repeatFilterMaxBits bound the filter: 512 B at least, 16 MiB at
	// most. Past about 13 million messages the false-positive rate rises; the answer stays right.
	repeatFilterMinBits = 1 << 12
	repeatFilterMaxBits = 1 << 27
	// maxRepeatCandidates bounds the IDs kept in memory and sent to PostgreSQL; a scan with more
	// gives up, and PostgreSQL finds the repeated IDs among all of them as before.
	maxRepeatCandidates = 1 << 16
)

// repeatFilter collects the event IDs of a scan that may occur more than once.
type repeatFilter struct {
	bits      []uint64
	mask      uint64
	seed      maphash.Seed
	seen      map[string]struct{}
	ids       []string
	overflown bool
}

// newRepeatFilter sizes a filter for about expected IDs.
func newRepeatFilter(expected uint64) *repeatFilter {
	n := min(max(expected*repeatFilterBitsPerID, repeatFilterMinBits), repeatFilterMaxBits)
	size := uint64(1) << bits.Len64(n-1) // a power of two, so a probe is a mask
	return &repeatFilter{bits: make([]uint64, size/64), mask: size - 1, seed: maphash.MakeSeed(), seen: map[string]struct{}{}}
}

// add records one scanned ID; a second sighting, or a false positive, makes it a candidate.
func (f *repeatFilter) add(id string) {
	h := maphash.String(f.seed, id)
	// Double hashing (Kirsch and Mitzenmacher): the probes of one 64-bit hash, its halves
	// swapped and made odd for the step.
	step := bits.RotateLeft64(h, 32) | 1
	present := true
	for i := range uint64(repeatFilterProbes) {
		b := (h + i*step) & f.mask
		w, bit := b>>6, uint64(1)<<(b&63)
		if f.bits[w]&bit == 0 {
			present = false
			f.bits[w] |= bit
		}
	}
	if !present || f.overflown {
		return
	}
	if _, ok := f.seen[id]; ok {
		return
	}
	if len(f.ids) == maxRepeatCandidates {
		f.overflown, f.seen, f.ids = true, nil, nil
		return
	}
	f.seen[id] = struct{}{}
	f.ids = append(f.ids, id)
}

// candidates returns the IDs that may repeat, and false when there were too many to keep: then
// any ID may.
func (f *repeatFilter) candidates() ([]string, bool) {
	if f.overflown {
		return nil, false
	}
	return f.ids, true
}
