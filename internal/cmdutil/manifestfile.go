package cmdutil

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/spf13/cobra"

	"github.com/replayctl/replayctl/manifest"
)

// ManifestError is a manifest file refused by manifest.Load, told the way an operator acts on it:
// a headline, then every problem on its own line.
type ManifestError struct {
	Headline string
	Problems []string
	err      error
}

// Error is the headline and each problem on a line of its own.
func (e *ManifestError) Error() string {
	return e.Headline + ":\n  " + strings.Join(e.Problems, "\n  ")
}

// Unwrap keeps manifest.ErrInvalid and its kinds matchable, which maps the error to exit code 2.
func (e *ManifestError) Unwrap() error { return e.err }

// LoadManifest loads and verifies the manifest at path. A refused manifest is a *manifestError;
// a file that does not exist is bad input (exit 2), since retrying cannot help.
func LoadManifest(path string) (*manifest.Manifest, error) {
	m, err := manifest.Load(path)
	switch {
	case err == nil:
		return m, nil
	case errors.Is(err, fs.ErrNotExist):
		return nil, &ExitError{Code: ExitUsage, Err: err}
	case !errors.Is(err, manifest.ErrInvalid):
		return nil, err
	}
	e := &ManifestError{err: err}
	if ve, ok := errors.AsType[*manifest.ValidationError](err); ok {
		e.Headline = fmt.Sprintf("%s: invalid manifest, %d problem(s)", path, len(ve.Errors)+ve.Omitted)
		for _, fe := range ve.Errors {
			e.Problems = append(e.Problems, fe.String())
		}
		if ve.Omitted > 0 {
			e.Problems = append(e.Problems, fmt.Sprintf("... and %d more", ve.Omitted))
		}
		return nil, e
	}
	e.Headline = path + ": invalid manifest"
	if errors.Is(err, manifest.ErrTampered) {
		e.Headline = path + ": tampered: the manifest was edited after plan, so it is not the job that was planned; " +
			"re-run `replayctl plan` instead of editing it"
	}
	e.Problems = []string{err.Error()}
	return nil, e
}

// NoArgs refuses positional arguments as a usage error. On a command with verbs under it (replayctl,
// ledger, reconcile) an argument is a mistyped verb: the error names the nearest ones.
func NoArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	if !cmd.HasAvailableSubCommands() {
		return UsageErrorf("%s takes no arguments; got %q", cmd.Name(), args)
	}
	msg := fmt.Sprintf("unknown command %q", args[0])
	if cmd.HasParent() {
		msg += " for " + cmd.CommandPath()
	}
	// cobra applies its default distance only on its own unknown-command path, which a command
	// with Args set does not take.
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2
	}
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += "; did you mean " + strings.Join(s, " or ") + "?"
	} else if cmd.HasParent() {
		var verbs []string
		for _, c := range cmd.Commands() {
			if c.IsAvailableCommand() {
				verbs = append(verbs, c.Name())
			}
		}
		msg += "; use " + strings.Join(verbs, " or ")
	}
	return UsageErrorf("%s", msg)
}
