package planner

import (
	"context"
	"fmt"

	"github.com/replayctl/replayctl/fingerprint"
	"github.com/replayctl/replayctl/ledger"
)

// planHashers are the algorithms a plan fingerprints each DLQ payload under, so that every ledger
// row is compared with the payload recomputed under the row's own algorithm.
type planHashers struct {
	// hashers: the consumer's current algorithm first (the one its SDK writes new rows with, and
	// the one copies within the DLQ are compared under), then the others it registered, then
	// canonical-json-v1, which SDKs before the registry wrote.
	hashers []fingerprint.Hasher
	// unreadable names registered algorithms whose stored options this binary cannot compute:
	// their rows count as conflicts.
	unreadable []string
}

func loadHashers(ctx context.Context, store Ledger, consumer string) (planHashers, error) {
	registered, err := store.FingerprintAlgorithms(ctx, consumer)
	if err != nil {
		return planHashers{}, err
	}
	var p planHashers
	for _, r := range registered {
		h, err := hasherFor(r)
		if err != nil {
			p.unreadable = append(p.unreadable, r.Algorithm)
			continue
		}
		p.hashers = append(p.hashers, h)
	}
	if !p.has(fingerprint.Algorithm) {
		p.hashers = append(p.hashers, fingerprint.V1())
	}
	return p, nil
}

func hasherFor(r ledger.FingerprintAlgorithm) (fingerprint.Hasher, error) {
	opts, err := fingerprint.ParseOptions(r.Options)
	if err != nil {
		return fingerprint.Hasher{}, err
	}
	return fingerprint.Resolve(r.Algorithm, opts)
}

func (p planHashers) has(alg string) bool {
	for _, h := range p.hashers {
		if h.Algorithm() == alg {
			return true
		}
	}
	return false
}

func (p planHashers) algorithms() []string {
	out := make([]string, len(p.hashers))
	for i, h := range p.hashers {
		out[i] = h.Algorithm()
	}
	return out
}

// fingerprints returns data's fingerprint under each algorithm, in order; v1 reuses v1Hash.
func (p planHashers) fingerprints(data []byte, v1Hash string) []string {
	out := make([]string, len(p.hashers))
	for i, h := range p.hashers {
		if h.Algorithm() == fingerprint.Algorithm {
			out[i] = v1Hash
		} else {
			out[i] = h.Sum(data)
		}
	}
	return out
}

func (p planHashers) warnings(consumer string) []string {
	var w []string
	for _, alg := range p.unreadable {
		w = append(w, fmt.Sprintf("consumer %s registered fingerprint algorithm %s, which this replayctl cannot compute: its ledger rows count as conflicts; upgrade replayctl", consumer, alg))
	}
	return w
}
