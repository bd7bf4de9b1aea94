package keys

import (
	"context"
	"fmt"

	"github.com/replayctl/replayctl/ledger"
)

// PruneRequest is `replayctl keys prune`.
type PruneRequest struct {
	Options ledger.APIKeysPruneOptions
	// Confirm, when set, is shown the dry run's counts and decides; nil means confirmed (--yes).
	Confirm func(*ledger.APIKeysPruneReport) (bool, error)
}

// Prune applies ledger prune's rules to the API records: sealed responses go at replay_until,
// records become tombstones at evidence_until, tombstones go after the tombstone retention;
// processing and uncertain records are never touched. A dry run only counts; otherwise the
// counts are confirmed first (unless nothing is due), then the batches run.
func Prune(ctx context.Context, store Store, req PruneRequest) (*ledger.APIKeysPruneReport, error) {
	if err := store.CheckSchema(ctx); err != nil {
		return nil, err
	}
	if err := checkRoute(ctx, store, req.Options.Route); err != nil {
		return nil, err
	}
	o := req.Options
	if o.DryRun || req.Confirm == nil {
		return store.APIKeysPrune(ctx, o)
	}
	o.DryRun = true
	counts, err := store.APIKeysPrune(ctx, o)
	if err != nil {
		return nil, err
	}
	if counts.Bodies+counts.Tombstoned+counts.Rows+counts.DailyCounts == 0 {
		return counts, nil
	}
	ok, err := req.Confirm(counts)
	if err != nil {
		return counts, err
	}
	if !ok {
		return counts, fmt.Errorf("%w: pass --yes to prune without a terminal", ErrNotConfirmed)
	}
	o.DryRun, o.AsOf = false, counts.AsOf
	return store.APIKeysPrune(ctx, o)
}
