package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/replayctl/replayctl/internal/cmdutil"
)

// environmentHelp is `replayctl help environment`.
const environmentHelp = `Environment variables replayctl reads (a flag always wins over its variable):

  REPLAYCTL_DATABASE_URL    the ledger's PostgreSQL URL (--database-url); then DATABASE_URL;
                            default: the local socket, database test
  DATABASE_URL              the ledger's URL when REPLAYCTL_DATABASE_URL is unset
  NATS_URL                  the NATS server list (--nats-url); overrides a context's url
  NATS_CONTEXT              the natscli context to use (--context); else the selected one
  NATS_USER, NATS_PASSWORD  credentials (--user, --password); a user alone is a token
  NATS_TOKEN                a token (--token)
  NATS_CREDS                a user JWT and seed file (--creds)
  NATS_NKEY                 an NKey seed file (--nkey)
  NATS_CERT, NATS_KEY       a client certificate and key (--tlscert, --tlskey)
  NATS_CA                   the authority that signed the server's certificate (--tlsca)
  XDG_CONFIG_HOME           where natscli's contexts are (default ~/.config/nats/context)
  USER                      the actor recorded in the audit log when --actor is not given
  REPLAYCTL_KEY_SECRET_FILE the API idempotency key secret (keys show --key)
  REPLAYCTL_KEYRING_FILE    the keyring that opens sealed result bodies (shadow --keyring)
  NO_COLOR                  any value: no colour on a terminal
  REPLAYCTL_CPUPROFILE, REPLAYCTL_TRACE
                            write a CPU profile or an execution trace of the command to this path
  OTEL_EXPORTER_OTLP_ENDPOINT
                            send OpenTelemetry traces of execute and shadow there (OTLP,
                            http/protobuf, or grpc with OTEL_EXPORTER_OTLP_PROTOCOL=grpc); the
                            other OTEL_* variables as the specification says; OTEL_SDK_DISABLED
                            or OTEL_TRACES_EXPORTER=none turn them off (docs/tracing.md)

No URL, password or token is ever written to a manifest, the ledger, the audit log or an error.
docs/runbook.md ("Environment") has the precedence in full.
`

// newCmdHelp replaces cobra's help command: "environment" is a topic, and an unknown topic is a
// usage error (exit 2) instead of a usage text that exits 0.
func newCmdHelp() *cobra.Command {
	return &cobra.Command{
		Use:   "help [command | environment]",
		Short: "Help about any command, or about the environment variables replayctl reads",
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 1 && args[0] == "environment" {
				_, err := fmt.Fprint(c.OutOrStdout(), environmentHelp)
				return err
			}
			cmd, rest, err := c.Root().Find(args)
			if err != nil || cmd == nil || len(rest) > 0 || (cmd == c.Root() && len(args) > 0) {
				return cmdutil.UsageErrorf("unknown help topic %q: give a command (replayctl help plan) or environment", strings.Join(args, " "))
			}
			cmd.InitDefaultHelpFlag()
			return cmd.Help()
		},
	}
}
