package jobhistory

import (
	"context"
	"fmt"
	"strings"

	"golang.org/x/crypto/ssh"

	"github.com/replayctl/replayctl/approval"
	"github.com/replayctl/replayctl/sshsig"

	"github.com/replayctl/replayctl/fault"
	"github.com/replayctl/replayctl/ledger"
)

// ErrAuditBroken means an audit entry was changed, deleted or inserted around replayctl: the
// log cannot be trusted for the job (exit 3).
var ErrAuditBroken = fault.New(fault.Refused, "the audit chain is broken")

// AuditVerification is what `replayctl log --verify` found.
type AuditVerification struct {
	// JobID is the job checked; empty when the whole log was.
	JobID   string              `json:"jobId,omitempty"`
	Checked int64               `json:"checked"`
	Breaks  []ledger.AuditBreak `json:"breaks"`
}

// VerifyAudit checks the hash chain of jobID's audit entries (every entry when jobID is empty):
// each entry's hash over its fields and its link to the entry before it in its consumer's chain.
// A broken chain is returned with an error matching ErrAuditBroken that names the first break.
func VerifyAudit(ctx context.Context, store *ledger.Store, jobID string) (*AuditVerification, error) {
	if err := store.CheckSchema(ctx); err != nil {
		return nil, err
	}
	if jobID != "" {
		// An unknown job has no entries: "0 verified" would read as a clean log (exit 2 instead).
		if _, err := store.JobsGet(ctx, jobID); err != nil {
			return nil, err
		}
	}
	n, breaks, err := Breaks(ctx, store, jobID)
	if err != nil {
		return nil, err
	}
	v := &AuditVerification{JobID: jobID, Checked: n, Breaks: append([]ledger.AuditBreak{}, breaks...)}
	if len(breaks) == 0 {
		return v, nil
	}
	b := breaks[0]
	return v, fmt.Errorf("%w at entry #%d (%s of chain %s): %s; %d of %d entries checked do not hold (`replayctl log --verify --json` lists them)",
		ErrAuditBroken, b.ID, b.Action, b.Chain, b.Why, len(breaks), n)
}

// Breaks checks jobID's audit entries (every entry when empty) and every signature the ledger
// holds for them: the hash chain, the approvals against their entries, and each signature over
// its statement. It returns how many entries it checked and what does not hold, oldest first.
func Breaks(ctx context.Context, store Verifier, jobID string) (int64, []ledger.AuditBreak, error) {
	n, breaks, err := store.AuditVerify(ctx, jobID)
	if err != nil {
		return 0, nil, err
	}
	bad, err := verifySignatures(ctx, store, jobID)
	if err != nil {
		return 0, nil, err
	}
	return n, append(breaks, bad...), nil
}

// namespaceOf is the SSHSIG namespace a signed entry's action was signed in.
func namespaceOf(action string) string {
	switch {
	case action == "plan":
		return approval.NamespaceManifest
	case strings.HasPrefix(action, "policy."):
		return approval.NamespacePolicy
	default:
		return approval.NamespaceApproval
	}
}

// verifySignatures checks every signature the ledger holds for jobID (all of them when empty):
// each signed audit entry's over the statement it recorded, made by the key it names; for a
// job, also its plan's signature over its job ID and digest, and each signed approval's over
// the statement of the row as it is now (a field edited by hand breaks it).
func verifySignatures(ctx context.Context, store Verifier, jobID string) ([]ledger.AuditBreak, error) {
	entries, err := store.AuditSigned(ctx, jobID)
	if err != nil {
		return nil, err
	}
	var out []ledger.AuditBreak
	for _, e := range entries {
		pub, err := sshsig.Verify([]byte(e.Signature), namespaceOf(e.Action), []byte(e.Statement))
		switch {
		case err != nil:
			out = append(out, ledger.AuditBreak{ID: e.ID, Chain: e.Chain, JobID: e.JobID, Action: e.Action, Why: "its signature does not verify over its statement: " + err.Error()})
		case e.SignerKey != "" && ssh.FingerprintSHA256(pub) != e.SignerKey:
			out = append(out, ledger.AuditBreak{ID: e.ID, Chain: e.Chain, JobID: e.JobID, Action: e.Action,
				Why: fmt.Sprintf("it names key %s but was signed by %s", e.SignerKey, ssh.FingerprintSHA256(pub))})
		}
	}
	if jobID == "" {
		return out, nil
	}
	rec, err := store.JobsGet(ctx, jobID)
	if err != nil {
		return nil, err
	}
	if rec.PlanSignature != "" {
		planned := approval.Job{ID: rec.ID, ManifestDigest: rec.ManifestDigest, PlanSignature: rec.PlanSignature}
		if _, err := planned.PlannerKey(); err != nil {
			out = append(out, ledger.AuditBreak{JobID: jobID, Action: "plan signature", Why: "the job's plan signature does not verify over its ID and manifest digest: " + err.Error()})
		}
	}
	recs, err := store.ApprovalsForJob(ctx, jobID)
	if err != nil {
		return nil, err
	}
	for _, r := range recs {
		if r.Signature == "" {
			continue
		}
		if _, err := sshsig.Verify([]byte(r.Signature), approval.NamespaceApproval, approval.Statement(r)); err != nil {
			out = append(out, ledger.AuditBreak{ID: r.ID, JobID: jobID, Action: fmt.Sprintf("approval #%d signature", r.ID),
				Why: fmt.Sprintf("the %s decision by %s does not match its signature: changed in the ledger after it was signed", r.Decision, r.Actor)})
		}
	}
	return out, nil
}
