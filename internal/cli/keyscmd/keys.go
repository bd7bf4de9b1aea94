// Package keyscmd is `replayctl keys`: the HTTP idempotency records' policies, counts, records and
// settlements.
package keyscmd

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/replayctl/replayctl/idempotency"
	"github.com/replayctl/replayctl/internal/cmdutil"
)

// NewCmdKeys returns the keys command, the parent of the verbs over API idempotency records.
func NewCmdKeys(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "keys <command>",
		Short: "Look after the API idempotency records (policy, stats, show, uncertain, resolve, prune)",
		Long: `Look after the records the HTTP idempotency middleware (package idempotency) keeps for API
requests with an Idempotency-Key, in their own ledger table (api_keys, never effects). No raw
key, plaintext body or payload field is stored or printed: keys are HMACs under the service's
secret, responses are sealed, callers are hashes. docs/api.md is the guide.

  policy     every route's and consumer's registered replay and evidence windows, and the
             delays they were derived from
  stats      per route: requests, replays, in-progress conflicts, payload mismatches per client
             per day, uncertain records, each against its threshold
  show       the records of one key (--key K hashed with the service's secret, or --key-hash)
  uncertain  the records awaiting a decision, oldest first
  resolve    settle an uncertain record as a person decided, with an audit entry
  prune      drop sealed responses past replay_until, turn records past evidence_until into
             tombstones, delete old tombstones (ledger prune's rules)`,
		Example: `  replayctl keys policy
  replayctl keys stats --since 7d
  replayctl keys show --route "POST /v1/charges" --key 0b7a9c2e-… --key-secret-file /etc/billing/key-secret
  replayctl keys uncertain --route "POST /v1/charges"`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(NewCmdKeysPolicy(f, nil), NewCmdKeysStats(f, nil), NewCmdKeysShow(f, nil),
		NewCmdKeysUncertain(f, nil), NewCmdKeysResolve(f, nil), NewCmdKeysPrune(f, nil))
	return cmd
}

// keySecretFlag is --key-secret-file: the service's HMAC secret, for verbs that hash a raw key.
func keySecretFlag(cmd *cobra.Command, into *string) {
	cmd.Flags().StringVar(into, "key-secret-file", os.Getenv("REPLAYCTL_KEY_SECRET_FILE"),
		"file with the service's base64 HMAC key secret, to hash --key (default: $REPLAYCTL_KEY_SECRET_FILE)")
}

// readKeySecret reads --key-secret-file when a raw key needs hashing; an unreadable or bad file
// is bad input.
func readKeySecret(path, rawKey string) ([]byte, error) {
	if path == "" || rawKey == "" {
		return nil, nil
	}
	secret, err := idempotency.ReadKeySecretFile(path)
	if err != nil {
		return nil, cmdutil.UsageErrorf("--key-secret-file: %v", err)
	}
	return secret, nil
}
