// Package clitest runs one verb's cobra command in a unit test the way gh's pkg/cmd tests do:
// flags through the verb's runF, with a factory whose ledger and NATS fail the test if the verb
// opens them before its run.
package clitest

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/replayctl/replayctl/internal/cmdutil"
	"github.com/replayctl/replayctl/internal/iostreams"
	"github.com/replayctl/replayctl/ledger"
)

// Factory is a Factory acting as bob whose ledger and JetStream fail the test if asked for.
func Factory(t *testing.T) *cmdutil.Factory {
	t.Helper()
	ios, _, _, _ := iostreams.Test()
	f := cmdutil.NewFactory(ios)
	f.Ledger = func(context.Context) (*ledger.Store, error) {
		t.Fatal("the verb opened the ledger before its run")
		return nil, nil
	}
	f.JetStream = func(context.Context) (jetstream.JetStream, func(), error) {
		t.Fatal("the verb connected to NATS before its run")
		return nil, nil, nil
	}
	f.Actor = func() string { return "bob" }
	return f
}

// Run runs cmd alone with args, as its parent would, and returns its error.
func Run(cmd *cobra.Command, args ...string) error {
	cmd.SetArgs(args)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	return cmd.Execute()
}
