package shared

import (
	"fmt"
	"strings"
	"time"

	"github.com/replayctl/replayctl/actor"
	"github.com/replayctl/replayctl/approval"
)

// ApprovalsText is where a job stands against its approval policy, in one line.
func ApprovalsText(a *approval.State) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %d required (%s)", len(a.Approvals), a.Required, a.Why)
	for _, r := range a.Approvals {
		fmt.Fprintf(&b, "; approved by %s until %s", actor.Display(r.Actor), r.ExpiresAt.UTC().Format(time.RFC3339))
		if r.SignerKey != "" {
			fmt.Fprintf(&b, " (signed, key %s)", r.SignerKey)
		}
		fmt.Fprintf(&b, ": %s", r.Note)
	}
	for _, r := range a.Rejections {
		fmt.Fprintf(&b, "; REJECTED by %s: %s", actor.Display(r.Actor), r.Note)
	}
	if a.Voided > 0 {
		fmt.Fprintf(&b, "; %d earlier decision(s) void", a.Voided)
	}
	if a.Unverified > 0 {
		fmt.Fprintf(&b, "; %d approval(s) not counted: unsigned, or not signed by an allowed signer other than the planner", a.Unverified)
	}
	return b.String()
}
