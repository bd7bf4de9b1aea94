package ledger

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/replayctl/replayctl/apikey"
)

// apiKeysCompleteLate stores the response of an owner whose lease lapsed while its call ran (a
// frozen or stalled process) after the record became uncertain or was settled: the owner is the
// only one who knows how the call ended, so its answer replaces the look-up's or a person's. It
// holds only while the record still names that owner, i.e. no retry has claimed it since; after
// one did, the retry's own call carries the same operation ID and the provider answers it with
// this call's result. The old state and resolution come back, so the caller can say which
// verdict its answer corrected.
const apiKeysCompleteLate = `
update api_keys k
   set state = 'completed', resolution = null, response_status = $4, response_key_id = nullif($5, ''),
       response_sealed = $6, external_ref = coalesce(nullif($7, ''), k.external_ref),
       replay_until = now() + $8::bigint * interval '1 millisecond',
       evidence_until = greatest(k.evidence_until, now() + $9::bigint * interval '1 millisecond'),
       note = left('completed late by its first owner after it was ' || old.state ||
                   coalesce(' ' || old.resolution, '') || coalesce(' (' || old.note || ')', ''), 500),
       lease_owner = null, lease_expires_at = null, updated_at = now()
  from (select scope_hash, key_hash, state, resolution, note from api_keys
         where scope_hash = $1 and key_hash = $2 for update) old
 where k.scope_hash = old.scope_hash and k.key_hash = old.key_hash
   and k.lease_owner = $3 and k.state in ('uncertain', 'reconciled')
returning old.state, coalesce(old.resolution, '')`

// APIKeysCompleteLate stores c's response on a record c.Owner's request no longer holds but
// nobody claimed since (uncertain, or reconciled by a look-up or a person); nil when the record
// is not c.Owner's any more.
func (s *Store) APIKeysCompleteLate(ctx context.Context, c apikey.Completion) (*apikey.LateCompletion, error) {
	var was, resolution string
	err := s.pool.QueryRow(ctx, apiKeysCompleteLate, c.ScopeHash, c.KeyHash, c.Owner, c.Status, c.KeyID, c.Sealed,
		c.ExternalRef, c.ReplayWindow.Milliseconds(), c.EvidenceWindow.Milliseconds()).Scan(&was, &resolution)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store a late completion of an API record: %w", err)
	}
	return &apikey.LateCompletion{Was: apikey.State(was), WasResolution: apikey.Resolution(resolution)}, nil
}
