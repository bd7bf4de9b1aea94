package job

import (
	"context"
	"errors"
	"fmt"

	"github.com/replayctl/replayctl/fault"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/manifest"
)

var (
	// ErrNotRecorded matches every manifest that is not the job the ledger recorded: a job never
	// recorded (ErrNoJob) or recorded with another digest (ErrOtherDigest). The *RecordedError
	// says which.
	ErrNotRecorded = fault.New(fault.Invalid, "manifest does not match the recorded job")

	// ErrNoJob means the ledger has no job with the manifest's ID: planned against another
	// ledger, or never recorded.
	ErrNoJob = fmt.Errorf("%w: the ledger has no such job", ErrNotRecorded)

	// ErrOtherDigest means the ledger recorded the manifest's job with another digest: the file
	// was edited and re-sealed, or is older than a re-planned job.
	ErrOtherDigest = fault.Wrap(fault.Refused, ErrNotRecorded, "manifest does not match the recorded job: the recorded digest differs")
)

// RecordedError is CheckRecorded's refusal. Callers wrap it in their own family: a gate for
// shadow and execute, bad input or a gate for a command given a manifest file.
type RecordedError struct {
	JobID string
	// Digest is the manifest's; Recorded the ledger's, empty when the ledger has no such job.
	Digest   string
	Recorded string
}

// Error says what differs and what to do.
func (e *RecordedError) Error() string {
	if e.Recorded == "" {
		return fmt.Sprintf("the ledger has no job %s for this manifest; re-run `replayctl plan` to plan and record it "+
			"(or point --database-url at the ledger it was planned in)", e.JobID)
	}
	return fmt.Sprintf("job %s was recorded with digest %s, this manifest has %s: it was changed after plan, or is older than "+
		"a re-planned job; use the manifest `replayctl plan` wrote for this job, or re-run `replayctl plan` instead of editing it",
		e.JobID, e.Recorded, e.Digest)
}

// Is makes a RecordedError match ErrNotRecorded, and ErrNoJob or ErrOtherDigest by its kind.
func (e *RecordedError) Is(target error) bool {
	switch target {
	case ErrNotRecorded:
		return true
	case ErrNoJob:
		return e.Recorded == ""
	case ErrOtherDigest:
		return e.Recorded != ""
	}
	return false
}

// Kind is fault.Refused for another digest (the manifest was changed after plan), fault.Invalid for
// a job the ledger never recorded.
func (e *RecordedError) Kind() fault.Kind {
	if e.Recorded != "" {
		return fault.Refused
	}
	return fault.Invalid
}

// CheckRecorded returns m's job as the ledger recorded it, or a *RecordedError when the ledger has
// no such job or recorded it with another digest: only the manifest plan sealed for the job may
// drive it. Other failures (an unreachable ledger) are returned as they are.
func CheckRecorded(ctx context.Context, store JobReader, m *manifest.Manifest) (ledger.Job, error) {
	rec, err := store.JobsGet(ctx, m.ID)
	if errors.Is(err, ledger.ErrJobNotFound) {
		return ledger.Job{}, &RecordedError{JobID: m.ID, Digest: m.Digest}
	}
	if err != nil {
		return ledger.Job{}, err
	}
	if rec.ManifestDigest != m.Digest {
		return ledger.Job{}, &RecordedError{JobID: m.ID, Digest: m.Digest, Recorded: rec.ManifestDigest}
	}
	return rec, nil
}
