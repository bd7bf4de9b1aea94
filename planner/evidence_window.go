package planner

import (
	"context"
	"fmt"
	"time"

	"github.com/replayctl/replayctl/apikey"
)

// EvidenceWindowSource says where plan's evidence window came from.
type EvidenceWindowSource string

// The sources of the evidence window, in the order plan prefers them.
const (
	// EvidenceFromFlag: --evidence-window, an operator's override.
	EvidenceFromFlag EvidenceWindowSource = "flag"
	// EvidenceFromPolicy: the EvidenceRetention the consumer's SDK registered when it started.
	EvidenceFromPolicy EvidenceWindowSource = "registered_policy"
	// EvidenceFromDefault: neither; the SDK's default.
	EvidenceFromDefault EvidenceWindowSource = "default"
)

// resolveEvidenceWindow returns the evidence window plan judges old events by: the flag when
// given (with a warning when it differs from the registered policy), else the consumer's
// registered policy, else DefaultEvidenceWindow.
func resolveEvidenceWindow(ctx context.Context, store Ledger, consumer string, flag time.Duration) (time.Duration, EvidenceWindowSource, string, error) {
	policies, err := store.RetentionPoliciesList(ctx, apikey.PolicyConsumer, consumer)
	if err != nil {
		return 0, "", "", err
	}
	var registered *apikey.Policy
	if len(policies) == 1 {
		registered = &policies[0]
	}
	switch {
	case flag > 0 && registered != nil && flag != registered.EvidenceWindow:
		return flag, EvidenceFromFlag, fmt.Sprintf("--evidence-window %s differs from the EvidenceRetention %s consumer %s registered at %s: events are judged by the flag; "+
			"a shorter window sends events the ledger still proves to the look-up, a longer one treats pruned events as never seen",
			flag, registered.EvidenceWindow, consumer, registered.RegisteredAt.UTC().Format(time.RFC3339)), nil
	case flag > 0:
		return flag, EvidenceFromFlag, "", nil
	case registered != nil:
		return registered.EvidenceWindow, EvidenceFromPolicy, "", nil
	}
	return DefaultEvidenceWindow, EvidenceFromDefault, "", nil
}
