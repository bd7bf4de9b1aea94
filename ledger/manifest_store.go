package ledger

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/replayctl/replayctl/fault"
)

var (
	// ErrManifestNotStored means the job exists but the ledger holds no manifest for it: it was
	// planned before manifests were stored with their jobs.
	ErrManifestNotStored = fault.New(fault.Invalid, "no manifest stored with the job")

	// ErrManifestCorrupt means the stored manifest's bytes no longer hash to what was stored.
	ErrManifestCorrupt = fault.New(fault.Refused, "stored manifest corrupt")
)

const jobManifestsInsert = `insert into job_manifests (job_id, sha256, body) values ($1, $2, $3)`

// StoreManifest records body, the job's manifest in the file form, with the job inside the
// session's transaction. A job that already has one matches ErrConflict.
func (p *PlanSession) StoreManifest(ctx context.Context, jobID string, body []byte) error {
	if _, err := p.tx.Exec(ctx, jobManifestsInsert, jobID, sha256Hex(body), body); err != nil {
		return fmt.Errorf("plan: store the manifest of job %s: %w", jobID, translate(err))
	}
	return nil
}

// The left join tells a job without a stored manifest from no job at all.
const jobManifestsGet = `
select m.sha256, m.body
  from jobs j left join job_manifests m on m.job_id = j.id
 where j.id = $1`

// JobManifestsGet returns the manifest stored with jobID, exactly as plan wrote it, after
// checking that it hashes to what was stored (ErrManifestCorrupt otherwise). A missing job
// matches ErrJobNotFound, a job without a stored manifest ErrManifestNotStored. A read, so it is
// sent again after a lost connection.
func (s *Store) JobManifestsGet(ctx context.Context, jobID string) ([]byte, error) {
	var sum *string
	var body []byte
	_, err := retryLostConnection(ctx, func() error {
		return s.pool.QueryRow(ctx, jobManifestsGet, jobID).Scan(&sum, &body)
	})
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil, fmt.Errorf("%w: the ledger has no job %q; `replayctl jobs` lists the jobs it has (a typo in the ID?), and `replayctl plan` records a new one", ErrJobNotFound, jobID)
	case err != nil:
		return nil, fmt.Errorf("read the manifest of job %s: %w", jobID, err)
	case sum == nil:
		return nil, fmt.Errorf("%w: job %s was planned before manifests were stored with their jobs; give the manifest file plan wrote instead of the job ID",
			ErrManifestNotStored, jobID)
	case sha256Hex(body) != *sum:
		return nil, fmt.Errorf("%w: the manifest stored with job %s hashes to sha256:%s, it was stored as sha256:%s; it was changed in the ledger after plan: use the manifest file plan wrote, or plan again",
			ErrManifestCorrupt, jobID, sha256Hex(body), *sum)
	}
	return body, nil
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
