package ledger

import (
	"fmt"
	"strings"
)

// Compacting an API record's tombstone takes two prune steps, not one statement as for the
// consumers' (pruneCompactBatch): the middleware claims a key by inserting its record (it reads
// nothing first), and an insert whose snapshot predates the compact tombstone would not see it,
// so if it met the whole row deleted in that moment it would insert a first record for a key
// that was used: a request run twice. The first step writes the compact tombstone and marks the
// whole row; the second deletes marked rows only apiKeysCompactedGrace after the mark, longer
// than any claim statement runs, so every claim that could miss the whole row sees the compact
// one (apiKeysClaim).
const (
	// apiKeysCompactedNote marks a whole tombstone whose compact form was written.
	apiKeysCompactedNote = "compact tombstone written"
	// apiKeysCompactedGrace is the least time between the two steps, as SQL.
	apiKeysCompactedGrace = "1 hour"
)

// The conditions take their horizon as $1 and the route (empty: every route) as $2, and are the
// predicates of the partial indexes of migration 0038: the records not compacted yet by
// evidence_until, the marked ones by the time of their mark.
const (
	// The tombstone step clears note, so an expired record's note is null until it is marked.
	apiKeysCompactWhere   = `state = 'expired' and note is null and evidence_until <= $1 and ($2 = '' or route = $2)`
	apiKeysDropWholeWhere = `state = 'expired' and note = '` + apiKeysCompactedNote + `'
	   and updated_at <= now() - interval '` + apiKeysCompactedGrace + `' and evidence_until <= $1 and ($2 = '' or route = $2)`
	// $3 (in the batch statement $4) are the routes pruned at a horizon of their own. The stored day
	// is the one after evidence_until, so comparing days never deletes one early.
	apiKeysCompactOldWhere = `t.evidence_until < ($1::timestamptz at time zone 'UTC')::date
	   and t.route_key in (select r.id from api_key_tombstone_routes r where ($2 = '' or r.route = $2) and not (r.route = any($3::text[])))`
)

// apiKeysRegisterTombstoneRoutes numbers the routes of the records the compaction step is about
// to act on, before it does: the step writes only records whose route has its number, read in
// the same snapshot, so a route numbered concurrently by another prune is never half seen.
const apiKeysRegisterTombstoneRoutes = `
insert into api_key_tombstone_routes (route)
select distinct route from api_keys where ` + apiKeysCompactWhere + `
on conflict (route) do nothing`

// apiKeysCompactBatch writes the compact tombstones of the oldest $3 whole tombstones due and
// marks those rows; a marked row leaves the step's condition, so the next batch needs no cursor.
var apiKeysCompactBatch = `
with batch as (
    select scope_hash, key_hash from api_keys k
     where ` + apiKeysCompactWhere + `
       and exists (select 1 from api_key_tombstone_routes r where r.route = k.route)
     order by evidence_until limit $3 for update skip locked),
marked as (
    update api_keys k set note = '` + apiKeysCompactedNote + `', updated_at = now()
      from batch b where k.scope_hash = b.scope_hash and k.key_hash = b.key_hash
    returning k.scope_hash, k.key_hash, k.route, k.evidence_until, k.resolution)
insert into api_key_tombstones (key, route_key, evidence_until, flags)
select api_key_tombstone_key(m.scope_hash, m.key_hash), r.id, (m.evidence_until at time zone 'UTC')::date + 1,
       case m.resolution when 'happened' then ` + fmt.Sprint(apiCompactFlagHappened) + `
                         when 'not_happened' then ` + fmt.Sprint(apiCompactFlagNotHappened) + `
                         else ` + fmt.Sprint(apiCompactFlagCompleted) + ` end
  from marked m join api_key_tombstone_routes r on r.route = m.route`

// Flags of an API compact tombstone: how the record had ended.
const (
	apiCompactFlagCompleted   = 1
	apiCompactFlagHappened    = 2
	apiCompactFlagNotHappened = 4
)

var (
	apiKeysDropWholeBatch  = `delete from api_keys k using` + fmt.Sprintf(apiKeysPruneBatch, apiKeysDropWholeWhere, "updated_at")
	apiKeysCompactOldBatch = `
delete from api_key_tombstones t
 where t.ctid = any(array(select t.ctid from api_key_tombstones t where ` + strings.Replace(apiKeysCompactOldWhere, "$3", "$4", 1) + ` limit $3))`
)
