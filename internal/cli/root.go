// Package cli is replayctl's root command: it builds every verb (one package each under
// internal/cli, sharing internal/cmdutil), runs one, and turns its error into the exit code.
// Its tests run the verbs end to end as an operator does, global flags included.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/replayctl/replayctl/approval"
	"github.com/replayctl/replayctl/internal/cli/approvecmd"
	"github.com/replayctl/replayctl/internal/cli/controlcmd"
	"github.com/replayctl/replayctl/internal/cli/democmd"
	"github.com/replayctl/replayctl/internal/cli/draincmd"
	"github.com/replayctl/replayctl/internal/cli/executecmd"
	"github.com/replayctl/replayctl/internal/cli/inspectcmd"
	"github.com/replayctl/replayctl/internal/cli/jobscmd"
	"github.com/replayctl/replayctl/internal/cli/keyscmd"
	"github.com/replayctl/replayctl/internal/cli/ledgercmd"
	"github.com/replayctl/replayctl/internal/cli/logcmd"
	"github.com/replayctl/replayctl/internal/cli/migratecmd"
	"github.com/replayctl/replayctl/internal/cli/pacecmd"
	"github.com/replayctl/replayctl/internal/cli/plancmd"
	"github.com/replayctl/replayctl/internal/cli/policycmd"
	"github.com/replayctl/replayctl/internal/cli/reconcilecmd"
	"github.com/replayctl/replayctl/internal/cli/shadowcmd"
	"github.com/replayctl/replayctl/internal/cli/showcmd"
	"github.com/replayctl/replayctl/internal/cli/statuscmd"
	"github.com/replayctl/replayctl/internal/cli/validatecmd"
	"github.com/replayctl/replayctl/internal/clip"
	"github.com/replayctl/replayctl/internal/cmdutil"
	"github.com/replayctl/replayctl/internal/iostreams"
	"github.com/replayctl/replayctl/internal/natsurl"
	"github.com/replayctl/replayctl/internal/tracing"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/manifest"
)

const rootLong = `replayctl replays a consumer's dead-letter queue (NATS JetStream) as a reviewed, gated job,
with the idempotency ledger in PostgreSQL. An idempotency key binds one business intent to its
result, so a replay must prove its boundary before any external effect is produced again:

  plan     scan the DLQ stream, join every event ID against the ledger and write a sealed
           manifest (job.json) and a job row: exactly which events will be replayed, which
           were kept out and why, and how many external calls to expect
  shadow   run every target through the consumer's shadow responder (no external writes),
           diff a 100-event sample against the recorded results and record a verdict
  execute  replay exactly the manifest's event IDs, gated on a passing shadow and a plan
           that is not stale, after a confirmation; rate-limited, resumable after a crash
  status   where a job's targets stand, from any terminal; pause, resume and cancel it;
           pace changes its rate and in-flight cap while it runs
  jobs     every job, newest first, with its counts and last change (--consumer, --status, --since)
  log      a job's audit trail: who did what, when and why
  reconcile  ask the consumer's look-up whether uncertain effects happened: reconciled, or
           marked for manual review; never retried
  ledger   "ledger stats --consumer C" for replay and mismatch rates, lease expiries and
           uncertain age, with warnings; "ledger prune" drops result bodies and old rows

Review between the steps: "show job.json" summarises a manifest and "validate --ledger job.json"
proves it is the manifest the job was recorded with. A manifest edited after plan is refused.

Exit codes:
  0  done
  1  runtime failure (database or NATS unreachable, interrupted); retrying may succeed
  2  usage or bad input (flags, arguments, an invalid manifest, NATS credentials or TLS
     the server refused, a NATS context that cannot be read, a NATS user not permitted to
     publish the replays, a database role that lacks a privilege: see ledger grants)
  3  a gate refused (no passing shadow, stale or tampered manifest, version not bumped)
  4  a guard stopped the run (budget, error rate, no progress), the job was cancelled,
     or the shadow verdict failed
  5  finished, but items need manual review (uncertain outcomes)

With --json, stdout carries one JSON document (on failure {"error": "...", "exitCode": N}) and
everything else goes to stderr.`

const rootExample = `  # once per environment and after every upgrade; safe to repeat
  replayctl migrate

  # freeze the boundary into a sealed manifest
  replayctl plan --consumer billing --stream DLQ_BILLING \
    --reason "payments provider outage INC-4521 fixed; re-run failed charges" \
    --ticket INC-4521 --since 6h --failure-match 'timeout|503' -o job.json

  # review it and prove it is the manifest the ledger recorded
  replayctl show job.json
  replayctl validate --ledger job.json

  # every target through the consumer's shadow responder; exit 4 when the verdict fails
  replayctl shadow job.json

  # CI: every gate, nothing published; then the real run and, elsewhere, its status
  replayctl execute job.json --dry-run
  replayctl execute job.json --rate 200
  replayctl status job-20261202-0300-3f9c

  # see it all on an embedded NATS server and the local PostgreSQL
  replayctl demo`

// NewCmdRoot returns the replayctl command with its global flags and verbs. Building it opens
// nothing; the flags are bound to f, whose funcs read them when a verb runs.
func NewCmdRoot(f *cmdutil.Factory) *cobra.Command {
	root := &cobra.Command{
		Use:           "replayctl",
		Short:         "Plan, shadow and execute dead-letter-queue replays safely",
		Long:          rootLong,
		Example:       rootExample,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       versionString(),
		Args:          cmdutil.NoArgs,
		RunE:          func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.StartOutput(); err != nil {
				return err
			}
			// cobra reports these as plain errors after this hook; checking them here first
			// makes them usage errors (exit 2) like every other flag problem.
			if err := cmd.ValidateRequiredFlags(); err != nil {
				return cmdutil.UsageErrorf("%s", err)
			}
			if err := cmd.ValidateFlagGroups(); err != nil {
				return cmdutil.UsageErrorf("%s", err)
			}
			// Every command that records who ran it takes the actor from here; checking it once
			// refuses it before anything is read or written.
			if err := manifest.ValidateActor(f.Actor()); err != nil {
				source := "--actor"
				if !f.ActorGiven() {
					source = "$USER or the OS user (the default of --actor)"
				}
				return cmdutil.UsageErrorf("%s %q %v", source, clip.Runes(f.Actor(), 80), err)
			}
			return nil
		},
	}
	root.SetIn(f.IOStreams.In)
	root.SetOut(f.IOStreams.Out)
	root.SetErr(f.IOStreams.ErrOut)
	root.SetVersionTemplate("{{.Name}} {{.Version}}\n")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return cmdutil.UsageErrorf("%s", err) })

	f.BindGlobalFlags(root.PersistentFlags())
	root.SetHelpCommand(newCmdHelp())

	root.AddCommand(
		migratecmd.NewCmdMigrate(f, nil),
		inspectcmd.NewCmdInspect(f, nil),
		plancmd.NewCmdPlan(f, nil),
		shadowcmd.NewCmdShadow(f, nil),
		executecmd.NewCmdExecute(f, nil),
		statuscmd.NewCmdStatus(f, nil),
		reconcilecmd.NewCmdReconcile(f, nil),
		controlcmd.NewCmdControl(f, "pause", nil),
		controlcmd.NewCmdControl(f, "resume", nil),
		controlcmd.NewCmdControl(f, "cancel", nil),
		approvecmd.NewCmdApprove(f, approval.Approved, nil),
		approvecmd.NewCmdApprove(f, approval.Rejected, nil),
		policycmd.NewCmdPolicy(f, nil),
		draincmd.NewCmdDrain(f, nil),
		showcmd.NewCmdShow(f, nil),
		jobscmd.NewCmdJobs(f, nil),
		logcmd.NewCmdLog(f, nil),
		pacecmd.NewCmdPace(f, nil),
		validatecmd.NewCmdValidate(f, nil),
		ledgercmd.NewCmdLedger(f),
		keyscmd.NewCmdKeys(f),
		democmd.NewCmdDemo(f, nil),
	)
	cmdutil.RegisterCompletions(f, root)
	return root
}

// Execute runs replayctl on the process's arguments and streams and returns its exit code.
// The first SIGINT or SIGTERM cancels the command's context, so work in progress stops cleanly;
// a second one kills the process, for an operator whose clean stop is itself stuck.
func Execute() int {
	f := cmdutil.NewFactory(iostreams.System())
	ctx, stop := interruptible(f.IOStreams.ErrOut)
	defer stop()
	// Traces go to the operator's OpenTelemetry backend when OTEL_* names one (docs/tracing.md);
	// a tracing setting that cannot be honoured is said, never a reason to refuse the command.
	flush, err := tracing.Setup(ctx, "replayctl")
	if err != nil {
		fmt.Fprintf(f.IOStreams.ErrOut, "replayctl: warning: %v; going on without traces\n", err)
	}
	defer flush()
	return run(ctx, f, NewCmdRoot(f), os.Args[1:])
}

// run executes args on root, built on f, and reports a failure; Execute and the tests share it.
func run(ctx context.Context, f *cmdutil.Factory, root *cobra.Command, args []string) int {
	defer f.CloseLedger()
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	code := cmdutil.ExitOK
	if err != nil {
		err = withPrivilegeHint(err)
		code = cmdutil.ExitCode(err)
		reportError(f, cmd, args, err, code)
	}
	if jerr := f.FinishOutput(ctx); jerr != nil {
		fmt.Fprintf(f.IOStreams.ErrOut, "replayctl: %s\n", jerr)
		if code == cmdutil.ExitOK {
			code = cmdutil.ExitFailure
		}
	}
	return code
}

// reportError prints err as "replayctl: <message>" on stderr, with a hint to --help for usage
// errors, and under --json also as {"error", "exitCode"} on stdout for CI.
func reportError(f *cmdutil.Factory, cmd *cobra.Command, args []string, err error, code int) {
	msg := redact(err.Error(), f.DatabaseURL(), ledger.RedactURL)
	if settings, err := f.NATS(); err == nil {
		msg = settings.Scrub(msg)
	}
	msg = cmdutil.RedactCredentials(natsurl.Scrub(msg, f.NATSURL()))
	ios := f.IOStreams
	// Messages quote ledger rows, manifests and flags: no terminal escape in them is obeyed.
	fmt.Fprintf(ios.ErrOut, "replayctl: %s\n", clip.Text(msg))
	if errors.Is(err, cmdutil.ErrUsage) {
		fmt.Fprintf(ios.ErrOut, "Run '%s --help' for usage.\n", cmd.CommandPath())
	}
	if ee, ok := errors.AsType[*cmdutil.ExitError](err); ok && ee.Reported {
		return
	}
	if f.JSON() || jsonRequested(args) {
		_ = cmdutil.PrintJSON(ios.Out, "Error", struct {
			Error    string `json:"error"`
			ExitCode int    `json:"exitCode"`
		}{msg, code})
	}
}

// redact replaces secret, wherever it appears in msg, with its redacted form, for messages from
// libraries that echo a connection URL verbatim.
func redact(msg, secret string, redacted func(string) string) string {
	if secret == "" {
		return msg
	}
	return strings.ReplaceAll(msg, secret, redacted(secret))
}

// jsonRequested reports whether args ask for --json even though flag parsing stopped before
// reading it: a CI job that always passes --json still gets the error object after a typo.
func jsonRequested(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if a == "--json" || a == "--json=true" || a == "--jq" || strings.HasPrefix(a, "--jq=") {
			return true
		}
	}
	return false
}

// withPrivilegeHint marks a statement PostgreSQL refused for the role's privileges and says where
// the grants come from; other errors are returned unchanged.
func withPrivilegeHint(err error) error {
	classified := ledger.ClassifyPermission(err)
	if classified == err {
		return err
	}
	return fmt.Errorf("%w; the role in --database-url needs the grants of its kind: see replayctl ledger grants --help and docs/operations.md", classified)
}

// interruptible returns a context the first SIGINT or SIGTERM cancels; the second exits at once
// (exit 1, an interrupt's code in docs/contract.md). The second is caught rather than left to
// the default action: a process started with SIGINT ignored (a shell's background job, some CI
// runners) would otherwise ignore it again once the first was handled.
func interruptible(errOut io.Writer) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(context.Background())
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case sig := <-signals:
			cancel(fmt.Errorf("interrupted by %s", sig))
		case <-done:
			return
		}
		select {
		case sig := <-signals:
			fmt.Fprintf(errOut, "replayctl: second %s: exiting now, without a clean stop\n", sig)
			os.Exit(cmdutil.ExitFailure)
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(signals)
		close(done)
		cancel(nil)
	}
}
