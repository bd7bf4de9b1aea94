package approval

import (
	"encoding/json"
	"fmt"
	"time"

	"golang.org/x/crypto/ssh"
)

// Lowers lists how next asks less of a consumer's jobs than current does: fewer approvals, a
// waiver or a threshold that lets more jobs through, longer-lived approvals, a signer removed or
// the signers list dropped, a signed plan no longer required. A lowering is a decision like a job:
// with allowed signers in current it needs a policy admin's signature (NamespacePolicy).
func Lowers(current, next *Policy) []string {
	if current == nil || current.Approvals == 0 {
		return nil
	}
	var out []string
	if next.Approvals < current.Approvals {
		out = append(out, fmt.Sprintf("approvals %d -> %d", current.Approvals, next.Approvals))
	}
	if next.UnlessWriteForbidden && !current.UnlessWriteForbidden {
		out = append(out, "write-forbidden jobs waived")
	}
	switch {
	case next.WhenCallsOver != nil && current.WhenCallsOver == nil:
		out = append(out, fmt.Sprintf("jobs of at most %d calls waived", *next.WhenCallsOver))
	case next.WhenCallsOver != nil && *next.WhenCallsOver > *current.WhenCallsOver:
		out = append(out, fmt.Sprintf("calls threshold %d -> %d", *current.WhenCallsOver, *next.WhenCallsOver))
	}
	if next.ValidFor() > current.ValidFor() {
		out = append(out, fmt.Sprintf("approvals valid for %s -> %s", current.ValidFor(), next.ValidFor()))
	}
	if current.RequireSignedPlan && !next.RequireSignedPlan {
		out = append(out, "signed plans no longer required")
	}
	cur, _ := current.Signers()
	nxt, _ := next.Signers()
	switch {
	case cur != nil && nxt == nil:
		out = append(out, "allowed signers removed: names would no longer be verified")
	case cur != nil:
		for _, sg := range cur {
			for _, principal := range sg.Principals {
				if !nxt.Lists(principal, sg.Key) {
					out = append(out, fmt.Sprintf("signer %s (key %s) removed", principal, ssh.FingerprintSHA256(sg.Key)))
				}
			}
		}
	}
	return out
}

// PolicyStatement is what a policy admin signs for a policy change: the consumer's policy as it
// will be, and when.
func PolicyStatement(p Policy, at time.Time) []byte {
	body, _ := json.Marshal(struct {
		Consumer             string  `json:"consumer"`
		Approvals            int     `json:"approvals"`
		UnlessWriteForbidden bool    `json:"unlessWriteForbidden"`
		WhenCallsOver        *int64  `json:"whenCallsOver"`
		ValidForSeconds      float64 `json:"validForSeconds"`
		AllowedSigners       string  `json:"allowedSigners"`
		RequireSignedPlan    bool    `json:"requireSignedPlan"`
		At                   string  `json:"at"`
	}{p.Consumer, p.Approvals, p.UnlessWriteForbidden, p.WhenCallsOver, p.ValidFor().Seconds(), p.AllowedSigners, p.RequireSignedPlan,
		at.UTC().Format(time.RFC3339)})
	return append([]byte("replayctl-policy v1\n"), append(body, '\n')...)
}
