package policycmd

import (
	"testing"

	"github.com/replayctl/replayctl/approval"
	"github.com/replayctl/replayctl/internal/cli/clitest"
)

func TestPolicySetFlagsReachTheRunWithoutOpeningTheLedger(t *testing.T) {
	var got *PolicyOptions
	err := clitest.Run(newCmdSet(clitest.Factory(t), func(o *PolicyOptions) error { got = o; return nil }),
		"--consumer", "billing", "--approvals", "2", "--when-calls-over", "300", "--unless-write-forbidden",
		"--allowed-signers", "team.allowed_signers", "--require-signed-plan", "--sign-key", "/keys/admin", "--valid-for", "12h")
	if err != nil || got == nil {
		t.Fatalf("policy set: %v", err)
	}
	p := got.Policy
	if p.Consumer != "billing" || p.Approvals != 2 || got.WhenCallsOver != 300 || !p.UnlessWriteForbidden || !p.RequireSignedPlan ||
		got.AllowedSignersPath != "team.allowed_signers" || got.SignKey != "/keys/admin" || got.ValidFor != "12h" || p.SetBy != "bob" {
		t.Fatalf("options %+v", got)
	}
}

// What a policy asks, in the one phrase show and set print, names whether approvers are proven.
func TestPolicyTextSaysWhetherNamesAreVerified(t *testing.T) {
	k := int64(100)
	named := approval.Policy{Consumer: "billing", Approvals: 1, WhenCallsOver: &k}
	if got, want := policyText(&named), "1 approval(s) from operators other than the planner, when a job expects over 100 external calls, each valid for 24h (names not verified: no allowed signers)"; got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	signed := approval.Policy{Consumer: "billing", Approvals: 1, RequireSignedPlan: true,
		AllowedSigners: "alice@example.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl\n"}
	if got, want := policyText(&signed), "1 approval(s) from operators other than the planner, each valid for 24h, signed by one of 1 allowed signers, of a signed plan"; got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	if got := policyText(&approval.Policy{}); got != "no approval needed" {
		t.Errorf("no approvals: %q", got)
	}
}
