package jobhistory

import (
	"context"
	"fmt"

	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/manifest"
)

// StoredManifest is the manifest stored with a job, verified.
type StoredManifest struct {
	Manifest *manifest.Manifest
	// Bytes are the file form exactly as plan wrote it to -o.
	Bytes []byte
}

// Manifest reads the manifest stored with jobID and checks it three ways: its bytes hash to what
// plan stored (ledger.ErrManifestCorrupt), its digest matches its content like a file's
// (manifest.ErrTampered), and that digest is the one the job was recorded with (ErrTampered
// too). A missing job matches ledger.ErrJobNotFound, a job planned before manifests were stored
// ledger.ErrManifestNotStored.
func Manifest(ctx context.Context, store *ledger.Store, jobID string) (*StoredManifest, error) {
	if err := store.CheckSchema(ctx); err != nil {
		return nil, err
	}
	job, err := store.JobsGet(ctx, jobID)
	if err != nil {
		return nil, err
	}
	body, err := store.JobManifestsGet(ctx, jobID)
	if err != nil {
		return nil, err
	}
	m, err := manifest.Parse(body)
	if err != nil {
		return nil, fmt.Errorf("the manifest stored with job %s: %w", jobID, err)
	}
	if m.ID != job.ID || m.Digest != job.ManifestDigest {
		return nil, fmt.Errorf("%w: the manifest stored with job %s is job %s with digest %s, the job was recorded with %s; use the manifest file plan wrote, or plan again",
			manifest.ErrTampered, jobID, m.ID, m.Digest, job.ManifestDigest)
	}
	return &StoredManifest{Manifest: m, Bytes: body}, nil
}
