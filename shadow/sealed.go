package shadow

import (
	"context"

	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/seal"
)

// originals reads the ledger's originals of ids and opens the bodies the consumer SDK sealed with
// Options.Keyring. A body it cannot open (no keyring, another key, a body moved from its row) is
// dropped, so the target is compared on its result hash, which the SDK takes over the plaintext;
// closed counts them.
func (sh *runner) originals(ctx context.Context, ids []string) (out map[string]ledger.Original, closed int64, err error) {
	out, err = sh.store.EffectsOriginals(ctx, sh.m.Consumer, ids, sh.m.EffectVersion.To)
	if err != nil {
		return nil, 0, err
	}
	for id, o := range out {
		if o.ResultBody == nil || !seal.IsSealedJSON(o.ResultBody) {
			continue
		}
		plain, err := sh.opts.Keyring.OpenJSON(o.ResultBody, seal.ResultContext(sh.m.Consumer, id, o.EffectVersion))
		if err != nil {
			o.ResultBody = nil
			closed++
		} else {
			o.ResultBody = plain
		}
		out[id] = o
	}
	return out, closed, nil
}
