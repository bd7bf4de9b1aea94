package cmdutil

import (
	"context"
	"slices"
	"time"

	"github.com/spf13/cobra"
)

// CompletionTimeout bounds what a completion reads from the ledger: a shell waits on it at every
// TAB, so an unreachable database must cost a moment and offer nothing, never hang the prompt.
const CompletionTimeout = 2 * time.Second

// maxCompletions bounds the job IDs offered at once, newest first.
const maxCompletions = 50

// Verbs whose one argument is a job ID, and those that take a job ID or a manifest file.
var (
	jobIDVerbs         = []string{"status", "pause", "resume", "cancel", "drain"}
	jobOrManifestVerbs = []string{"shadow", "execute", "show", "log", "pace"}
)

// RegisterCompletions makes the shell complete job IDs and --consumer names from the ledger
// (`replayctl completion bash|zsh|fish`, cobra's own verb). It is added to the commands after
// they are built, so the verbs' files stay about their work.
func RegisterCompletions(f *Factory, root *cobra.Command) {
	for _, c := range root.Commands() {
		switch {
		case slices.Contains(jobIDVerbs, c.Name()):
			c.ValidArgsFunction = completeJobIDs(f, cobra.ShellCompDirectiveNoFileComp)
		case slices.Contains(jobOrManifestVerbs, c.Name()):
			c.ValidArgsFunction = completeJobIDs(f, cobra.ShellCompDirectiveDefault)
		}
	}
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Flags().Lookup("consumer") != nil {
			_ = c.RegisterFlagCompletionFunc("consumer", completeConsumers(f))
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// completeJobIDs offers the ledger's job IDs for the first argument; directive says whether the
// shell may also offer files (a manifest path).
func completeJobIDs(f *Factory, directive cobra.ShellCompDirective) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ids, err := fromLedger(cmd, f, func(ctx context.Context) ([]string, error) {
			store, err := f.Ledger(ctx)
			if err != nil {
				return nil, err
			}
			return store.JobIDsByPrefix(ctx, toComplete, maxCompletions)
		})
		if err != nil {
			cobra.CompDebugln("replayctl: job IDs: "+RedactCredentials(err.Error()), false)
		}
		return ids, directive
	}
}

// completeConsumers offers the consumers the ledger knows for --consumer.
func completeConsumers(f *Factory) cobra.CompletionFunc {
	return func(cmd *cobra.Command, _ []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
		names, err := fromLedger(cmd, f, func(ctx context.Context) ([]string, error) {
			store, err := f.Ledger(ctx)
			if err != nil {
				return nil, err
			}
			return store.KnownConsumers(ctx)
		})
		if err != nil {
			cobra.CompDebugln("replayctl: consumers: "+RedactCredentials(err.Error()), false)
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	}
}

// fromLedger runs read under completionTimeout, abandoning it (not waiting) when the ledger does
// not answer in time: a pgx dial can outlive its context by a little, a prompt must not.
func fromLedger(cmd *cobra.Command, f *Factory, read func(context.Context) ([]string, error)) ([]string, error) {
	parent := cmd.Context()
	if parent == nil {
		parent = context.Background()
	}
	ctx, cancel := context.WithTimeout(parent, CompletionTimeout)
	defer cancel()
	type result struct {
		names []string
		err   error
	}
	done := make(chan result, 1)
	go func() {
		names, err := read(ctx)
		done <- result{names, err}
	}()
	select {
	case r := <-done:
		return r.names, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
