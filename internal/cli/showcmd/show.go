// Package showcmd is `replayctl show`: a manifest summarised, printed or exported.
package showcmd

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/spf13/cobra"

	"github.com/replayctl/replayctl/internal/cli/shared"
	"github.com/replayctl/replayctl/internal/cmdutil"
	"github.com/replayctl/replayctl/internal/iostreams"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/manifest"
)

// ShowOptions are the inputs of replayctl show.
type ShowOptions struct {
	IO     *iostreams.IOStreams
	Ledger func(ctx context.Context) (*ledger.Store, error)
	JSON   bool
	// Path is the argument: a manifest file, or a job ID whose stored manifest is shown.
	Path string
	// Output (-o) exports the manifest, byte for byte as plan wrote it, instead of summarising
	// it; Force lets it replace an existing file.
	Output string
	Force  bool
}

// NewCmdShow returns the show command. runF, when not nil, replaces the run function (tests).
func NewCmdShow(f *cmdutil.Factory, runF func(*ShowOptions) error) *cobra.Command {
	opts := &ShowOptions{IO: f.IOStreams, Ledger: f.Ledger}
	cmd := &cobra.Command{
		Use:   "show <job-id | job.json>",
		Short: "Summarise a manifest for review, or export a job's manifest",
		Long: `Print a readable summary of a manifest: the job and why it exists, the scan boundary, the
effect version, every figure of the plan, the failure reasons, what was kept out of the targets
(uncertain, in flight, conflicting payloads) and the first event IDs.

Give the manifest file, or the job ID: plan stores the sealed manifest with the job, and show
reads it from the ledger, checking that its bytes are the ones stored and its digest the job's.
-o FILE writes that manifest to FILE, byte for byte the file plan wrote (an existing FILE is
refused unless --force), for a runbook or a terminal without the original file.

The manifest is verified first, like validate: a manifest edited after plan (its digest does not
match) is refused with exit 3, like the gates; an invalid one with exit 2.
With --json, show prints the manifest itself.`,
		Example: `  replayctl show job.json
  replayctl show job-20261202-0300-3f9c
  replayctl show job-20261202-0300-3f9c -o job.json   # the planned file again
  replayctl show job.json --json | jq '.stats'`,
		Args: cmdutil.JobOrManifestArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Path = args[0]
			opts.JSON = f.JSON()
			if runF != nil {
				return runF(opts)
			}
			return showRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVarP(&opts.Output, "output", "o", "", "write the manifest to this file, byte for byte as plan wrote it, instead of summarising it")
	cmd.Flags().BoolVar(&opts.Force, "force", false, "with -o, replace an existing file")
	return cmd
}

func showRun(ctx context.Context, opts *ShowOptions) error {
	if opts.Force && opts.Output == "" {
		return cmdutil.UsageErrorf("--force replaces the file -o names; give -o FILE")
	}
	jm, err := cmdutil.LoadJobManifest(ctx, opts.Path, opts.Ledger)
	if err != nil {
		return err
	}
	m := jm.Manifest
	if opts.Output != "" {
		return exportManifest(opts, jm)
	}
	if opts.JSON {
		return manifest.Encode(opts.IO.Out, m)
	}
	return shared.PrintSummary(opts.IO.Out, opts.IO.IsStdoutTTY(), m)
}

// exportManifest writes jm's bytes to opts.Output and says so.
func exportManifest(opts *ShowOptions, jm *cmdutil.JobManifest) error {
	data, err := jm.Bytes()
	if err != nil {
		return err
	}
	err = manifest.WriteBytes(opts.Output, data, opts.Force)
	if errors.Is(err, fs.ErrExist) {
		return cmdutil.UsageErrorf("-o %s: the file exists; pass --force to replace it, or write the manifest elsewhere", opts.Output)
	}
	if err != nil {
		return err
	}
	m := jm.Manifest
	if opts.JSON {
		return cmdutil.PrintJSON(opts.IO.Out, "ManifestExport", struct {
			JobID  string `json:"jobId"`
			Path   string `json:"manifestPath"`
			Digest string `json:"manifestDigest"`
			Bytes  int    `json:"bytes"`
		}{m.ID, opts.Output, m.Digest, len(data)})
	}
	fmt.Fprintf(opts.IO.Out, "wrote the manifest of job %s to %s (%d bytes, digest %s)\n", m.ID, opts.Output, len(data), m.Digest)
	return nil
}
