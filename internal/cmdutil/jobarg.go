package cmdutil

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/replayctl/replayctl/job"
	"github.com/replayctl/replayctl/jobhistory"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/manifest"
	"github.com/replayctl/replayctl/protocol"
)

// The commands that act on one job take it as a job ID or as the path of its manifest file, alike:
// plan stores the sealed manifest with the job, so a runbook can name the job only. A file is
// verified as before (a tampered one is refused, exit 3) and must be its job's recorded manifest.

// JobOrManifestArg accepts exactly one positional argument, a job ID or a manifest file.
func JobOrManifestArg(cmd *cobra.Command, args []string) error {
	if len(args) != 1 {
		return UsageErrorf("%s takes exactly one argument, the job ID or its manifest file (job.json); got %d", cmd.Name(), len(args))
	}
	return nil
}

// IsManifestPath reports whether arg names a manifest file rather than a job ID: a file that
// exists, or a name no job ID has (a path separator, a .json name, a character IDs do not use).
func IsManifestPath(arg string) bool {
	if info, err := os.Stat(arg); err == nil && !info.IsDir() {
		return true
	}
	return strings.ContainsAny(arg, `/\`) || strings.HasSuffix(arg, ".json") || protocol.ValidateJobID(arg) != nil
}

// JobManifest is a job's manifest, from the file named on the command line or from the ledger.
type JobManifest struct {
	Manifest *manifest.Manifest
	// Path is the file it was read from; empty when it was read from the ledger.
	Path string
	// stored is the ledger's copy, exactly as plan wrote it.
	stored []byte
}

// Bytes returns the manifest exactly as plan wrote it.
func (j *JobManifest) Bytes() ([]byte, error) {
	if j.Path == "" {
		return j.stored, nil
	}
	return os.ReadFile(j.Path)
}

// Ref is how to name the job in a next step: the file the operator gave, else the job ID.
func (j *JobManifest) Ref() string {
	if j.Path != "" {
		return j.Path
	}
	return j.Manifest.ID
}

// LoadJobManifest resolves arg to a manifest: the file, verified (its recorded job is checked by
// the command's own gate), or the copy stored with the job ID, verified against the job.
func LoadJobManifest(ctx context.Context, arg string, openLedger func(context.Context) (*ledger.Store, error)) (*JobManifest, error) {
	if IsManifestPath(arg) {
		m, err := LoadManifest(arg)
		if err != nil {
			return nil, err
		}
		return &JobManifest{Manifest: m, Path: arg}, nil
	}
	store, err := openLedger(ctx)
	if err != nil {
		return nil, err
	}
	sm, err := jobhistory.Manifest(ctx, store, arg)
	if err != nil {
		return nil, err
	}
	return &JobManifest{Manifest: sm.Manifest, stored: sm.Bytes}, nil
}

// LedgerAndJob opens the ledger and resolves arg (a job ID or its manifest file, see jobIDOf):
// where every verb that acts on one job starts.
func LedgerAndJob(ctx context.Context, arg string, openLedger func(context.Context) (*ledger.Store, error)) (*ledger.Store, string, error) {
	store, err := openLedger(ctx)
	if err != nil {
		return nil, "", err
	}
	jobID, err := jobIDOf(ctx, arg, openLedger)
	if err != nil {
		return nil, "", err
	}
	return store, jobID, nil
}

// jobIDOf resolves arg to a job ID. A job ID is taken as it is (the command reads the job); a
// manifest file is verified and must be the manifest its job was recorded with: an edited or
// stale file is refused with exit 3, one whose job was never recorded with exit 2.
func jobIDOf(ctx context.Context, arg string, openLedger func(context.Context) (*ledger.Store, error)) (string, error) {
	if !IsManifestPath(arg) {
		return arg, nil
	}
	m, err := LoadManifest(arg)
	if err != nil {
		return "", err
	}
	if err := CheckRecorded(ctx, openLedger, arg, m); err != nil {
		return "", err
	}
	return m.ID, nil
}

// CheckRecorded requires the ledger to hold m's job, read from path, with m's digest.
func CheckRecorded(ctx context.Context, openLedger func(context.Context) (*ledger.Store, error), path string, m *manifest.Manifest) error {
	store, err := openLedger(ctx)
	if err != nil {
		return err
	}
	if err := store.CheckSchema(ctx); err != nil {
		return err
	}
	if _, err := job.CheckRecorded(ctx, store, m); err != nil {
		if errors.Is(err, job.ErrNotRecorded) {
			return fmt.Errorf("%s: %s: %w", path, job.ErrNotRecorded, err)
		}
		return err
	}
	return nil
}

// JobArg accepts exactly one positional argument, a job ID.
func JobArg(cmd *cobra.Command, args []string) error {
	if len(args) != 1 {
		return UsageErrorf("%s takes exactly one argument, the job ID (the manifest's id, see `replayctl show job.json`); got %d", cmd.Name(), len(args))
	}
	return nil
}
