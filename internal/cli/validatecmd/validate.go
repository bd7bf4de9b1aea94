// Package validatecmd is `replayctl validate`: a manifest checked offline, or against the ledger.
package validatecmd

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/replayctl/replayctl/internal/cli/shared"
	"github.com/replayctl/replayctl/internal/clip"
	"github.com/replayctl/replayctl/internal/cmdutil"
	"github.com/replayctl/replayctl/internal/iostreams"
	"github.com/replayctl/replayctl/job"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/manifest"
)

// ValidateOptions are the inputs of replayctl validate.
type ValidateOptions struct {
	IO     *iostreams.IOStreams
	Ledger func(ctx context.Context) (*ledger.Store, error)
	JSON   bool

	Path string
	// CheckLedger also requires the job to be recorded with the manifest's digest.
	CheckLedger bool
}

// NewCmdValidate returns the validate command. runF, when not nil, replaces the run function (tests).
func NewCmdValidate(f *cmdutil.Factory, runF func(*ValidateOptions) error) *cobra.Command {
	opts := &ValidateOptions{IO: f.IOStreams, Ledger: f.Ledger}
	cmd := &cobra.Command{
		Use:   "validate <job.json | job-id>",
		Short: "Check that a manifest is intact and valid",
		Long: `Check a manifest file: known fields only, apiVersion replayctl/v1, every field valid, and a
digest that matches the content. Every problem is listed with its JSON path; a digest that does
not match means the file was edited after plan and is refused.

With --ledger, also require the job to be recorded in the ledger with the same digest, so a
manifest that was edited and re-sealed by hand still does not pass. Given a job ID instead of a
file, validate checks the manifest the ledger stored with the job, as the other job verbs read it.

Exits 0 when the manifest is valid, 2 when it is not, and 3 when it is sound but not the job that
was planned: a digest that does not match its content, or (with --ledger) a job recorded with
another digest, as shadow and execute refuse it. A job the ledger never recorded is 2.`,
		Example: `  replayctl validate job.json
  replayctl validate --ledger job.json
  replayctl validate job-20261202-0300-3f9c
  replayctl validate --json job.json   # {"apiVersion": "replayctl/v1", "kind": "Validation", "valid": true, "jobId": ..., "manifestDigest": ..., ...}`,
		Args: cmdutil.JobOrManifestArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Path = args[0]
			opts.JSON = f.JSON()
			if runF != nil {
				return runF(opts)
			}
			return validateRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.CheckLedger, "ledger", false, "also require the job to be recorded in the ledger with this manifest's digest")
	return cmd
}

// ValidateResult is the --json output of validate.
type ValidateResult struct {
	Valid    bool     `json:"valid"`
	ID       string   `json:"jobId"`
	Digest   string   `json:"manifestDigest"`
	Targets  int64    `json:"targets"`
	Problems []string `json:"problems"`
	// Error and ExitCode repeat, for a refused manifest, what the error object of every other
	// command carries, so CI reads failures the same way everywhere.
	Error    string `json:"error,omitempty"`
	ExitCode int    `json:"exitCode"`
}

func validateRun(ctx context.Context, opts *ValidateOptions) error {
	m, err := loadManifest(ctx, opts)
	if err == nil && opts.CheckLedger {
		err = cmdutil.CheckRecorded(ctx, opts.Ledger, opts.Path, m)
	}
	if err != nil {
		return validateFailed(opts, m, err)
	}
	if opts.JSON {
		return cmdutil.PrintJSON(opts.IO.Out, "Validation", ValidateResult{
			Valid: true, ID: m.ID, Digest: m.Digest, Targets: m.Stats.Targets, Problems: []string{},
		})
	}
	fmt.Fprintf(opts.IO.Out, "%s: valid (job %s, %d targets, digest %s)\n", opts.Path, m.ID, m.Stats.Targets, m.Digest)
	if m.Source.Selection != nil || m.Source.ToSubject != "" || len(m.Source.StripHeaders) > 0 {
		fmt.Fprintf(opts.IO.Out, "%s: selection %s; replays to %s; stripped headers %s\n", opts.Path,
			clip.Line(shared.SelectionText(m.Source.Selection)), clip.Line(cmdutil.Or(m.Source.ToSubject, "each message's original subject")),
			clip.Line(cmdutil.Or(strings.Join(m.Source.StripHeaders, ", "), "none")))
	}
	if opts.CheckLedger {
		fmt.Fprintf(opts.IO.Out, "%s: matches the job recorded in the ledger\n", opts.Path)
	}
	return nil
}

// validateFailed reports a refused manifest. A runtime failure (ledger unreachable) is returned
// as it is: "could not check" must not read as "invalid".
func validateFailed(opts *ValidateOptions, m *manifest.Manifest, err error) error {
	var problems []string
	headline := err.Error()
	if me, ok := errors.AsType[*cmdutil.ManifestError](err); ok {
		headline, problems = me.Headline, me.Problems
	} else if errors.Is(err, job.ErrNotRecorded) {
		problems = []string{err.Error()}
	}
	if !opts.JSON || problems == nil {
		return err
	}
	code := cmdutil.ExitCode(err)
	res := ValidateResult{Problems: problems, Error: headline, ExitCode: code}
	if m != nil {
		res.ID, res.Digest, res.Targets = m.ID, m.Digest, m.Stats.Targets
	}
	if perr := cmdutil.PrintJSON(opts.IO.Out, "Validation", res); perr != nil {
		return perr
	}
	return &cmdutil.ExitError{Code: code, Err: err, Reported: true}
}

// loadManifest reads the manifest file, or the one the ledger stored with a job ID; a file that
// does not decode still yields what could be read of it, for the report.
func loadManifest(ctx context.Context, opts *ValidateOptions) (*manifest.Manifest, error) {
	if cmdutil.IsManifestPath(opts.Path) {
		return cmdutil.LoadManifest(opts.Path)
	}
	jm, err := cmdutil.LoadJobManifest(ctx, opts.Path, opts.Ledger)
	if err != nil {
		return nil, err
	}
	return jm.Manifest, nil
}
