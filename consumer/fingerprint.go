package consumer

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/replayctl/replayctl/fingerprint"
	"github.com/replayctl/replayctl/ledger"
)

// fingerprints computes request hashes under the consumer's own algorithm (Config.Fingerprint)
// and under the algorithm of any stored row, so a row written by an older SDK or under other
// options is compared with the incoming payload recomputed its way, never skipped.
type fingerprints struct {
	current  fingerprint.Hasher
	store    Ledger
	consumer string

	mu         sync.Mutex
	registered bool
	// known caches the hashers of algorithms met on rows; the ledger's registry is read again
	// only for an algorithm not seen yet.
	known map[string]fingerprint.Hasher
}

func newFingerprints(cfg Config, current fingerprint.Hasher) *fingerprints {
	return &fingerprints{current: current, store: cfg.Store, consumer: cfg.Name,
		known: map[string]fingerprint.Hasher{fingerprint.Algorithm: fingerprint.V1(), current.Algorithm(): current}}
}

// register records the current algorithm's options in the ledger before any row is written under
// it, so that the planner and instances with other options can compute it. Done once per process;
// a failure is returned and tried again by the next message.
func (f *fingerprints) register(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.registered {
		return nil
	}
	if err := f.store.FingerprintAlgorithmRegister(ctx, f.consumer, f.current.Algorithm(), f.current.Options().Encode()); err != nil {
		return err
	}
	f.registered = true
	return nil
}

// incoming returns payload's fingerprint under each row's algorithm, aligned with rows; "" where
// the algorithm cannot be computed (neither v1 nor registered for this consumer with options this
// binary reads). An error means the registry could not be read.
func (f *fingerprints) incoming(ctx context.Context, rows []ledger.EffectRow, payload []byte) ([]string, error) {
	out := make([]string, len(rows))
	for i, r := range rows {
		if r.RequestHashAlg == fingerprint.AlgorithmNone {
			// An imported row without a fingerprint: the event ID alone decides, so every payload
			// is the stored request.
			out[i] = r.RequestHash
			continue
		}
		h, err := f.hasher(ctx, r.RequestHashAlg)
		switch {
		case errors.Is(err, fingerprint.ErrUnknownAlgorithm):
		case err != nil:
			return nil, err
		default:
			out[i] = h.Sum(payload)
		}
	}
	return out, nil
}

func (f *fingerprints) hasher(ctx context.Context, alg string) (fingerprint.Hasher, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if h, ok := f.known[alg]; ok {
		return h, nil
	}
	if !fingerprint.IsV2(alg) {
		return fingerprint.Hasher{}, fmt.Errorf("%w: %q", fingerprint.ErrUnknownAlgorithm, alg)
	}
	registered, err := f.store.FingerprintAlgorithms(ctx, f.consumer)
	if err != nil {
		return fingerprint.Hasher{}, err
	}
	for _, r := range registered {
		if r.Algorithm != alg {
			continue
		}
		opts, err := fingerprint.ParseOptions(r.Options)
		if err != nil {
			return fingerprint.Hasher{}, fmt.Errorf("%w: %q: %w", fingerprint.ErrUnknownAlgorithm, alg, err)
		}
		h, err := fingerprint.Resolve(alg, opts)
		if err != nil {
			return fingerprint.Hasher{}, err
		}
		f.known[alg] = h
		return h, nil
	}
	return fingerprint.Hasher{}, fmt.Errorf("%w: %q is not registered for consumer %s", fingerprint.ErrUnknownAlgorithm, alg, f.consumer)
}

// refuseUncomparable refuses a message whose stored row was fingerprinted under an algorithm this
// process cannot compute: the payload may be the same request or another one, and processing it
// on a guess could repeat an effect or bind a different request to the stored result.
func (c *Consumer) refuseUncomparable(ctx context.Context, d *delivery, out Outcome, r ledger.EffectRow) Outcome {
	incoming := "not computable: " + r.RequestHashAlg
	c.recordIncident(ctx, ledger.EffectIncident{Consumer: c.cfg.Name, EventID: d.ev.ID, EffectVersion: d.ev.EffectVersion,
		Kind: ledger.IncidentPayloadConflict, DedupKey: fmt.Sprintf("seq %d %s", d.seq, incoming), StoredHash: r.RequestHash, IncomingHash: incoming})
	out.Kind, out.StoredHash = OutcomeConflict, r.RequestHash
	out.Err = fmt.Errorf("%w: event %q: its ledger row under effect version %d was fingerprinted with %s, which this instance cannot "+
		"compute, so the payload cannot be compared; it is never processed on a guess: run an SDK that knows the algorithm, or review it by hand",
		fingerprint.ErrUnknownAlgorithm, d.ev.ID, r.EffectVersion, r.RequestHashAlg)
	c.term(d, out.Err)
	return out
}
