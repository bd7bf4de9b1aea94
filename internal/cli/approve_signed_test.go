package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/replayctl/replayctl/internal/cmdutil"
	"github.com/replayctl/replayctl/internal/testenv/exectest"
	"github.com/replayctl/replayctl/internal/testenv/sshtest"
	"github.com/replayctl/replayctl/manifest"
)

func writeText(t *testing.T, path, text string) string {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// The four-eyes rule proven by keys: with allowed signers in the policy, execute counts only an
// approval signed by a listed key other than the key that signed the plan. A self-approval under
// another name, an unsigned approval, an unlisted key, a signature replayed for another job or
// edited in the ledger, and an approver removed from the list do not count; a lowering needs a
// policy admin's signature. Keys are ed25519 and ECDSA, made by ssh-keygen; one approval is
// signed by ssh-keygen itself, as for a hardware key.
func TestSignedApprovalsCountOnlyForListedKeysOtherThanThePlanners(t *testing.T) {
	t.Parallel()
	w := newExecWorld(t)
	w.Seed(3)
	dir := t.TempDir()
	aliceKey, alicePub := sshtest.Key(t, dir, "alice", "ed25519")
	bobKey, bobPub := sshtest.Key(t, dir, "bob", "ecdsa")
	carolKey, _ := sshtest.Key(t, dir, "carol", "ed25519")
	adminKey, adminPub := sshtest.Key(t, dir, "admin", "ed25519")
	team := "alice@example.com " + alicePub + "\nbob@example.com " + bobPub + "\nadmin@example.com namespaces=\"replayctl-policy\" " + adminPub + "\n"
	signers := writeText(t, filepath.Join(dir, "allowed_signers"), team)
	withoutBob := writeText(t, filepath.Join(dir, "without_bob"), "alice@example.com "+alicePub+"\nadmin@example.com namespaces=\"replayctl-policy\" "+adminPub+"\n")

	path := filepath.Join(dir, "job.json")
	if _, stderr, code := w.replayctl(t, "plan --consumer billing --stream "+exectest.DLQStream+" --reason '"+planReason+"' -o "+path+" --sign-key "+aliceKey); code != cmdutil.ExitOK {
		t.Fatalf("plan --sign-key: exit %d %s", code, stderr)
	}
	stopShadow, err := w.NewConsumer(nil, nil).ServeShadow(w.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stopShadow)
	w.RunConsumer(w.NewConsumer(nil, nil))
	if _, stderr, code := w.replayctl(t, "shadow "+path); code != cmdutil.ExitOK {
		t.Fatalf("shadow: exit %d %s", code, stderr)
	}
	jobID := w.jobIDOf(t, path)
	if _, stderr, code := w.replayctl(t, "policy set --consumer billing --approvals 1 --require-signed-plan --allowed-signers "+signers); code != cmdutil.ExitOK {
		t.Fatalf("policy set: exit %d %s", code, stderr)
	}

	refused := func(who, args, want string) {
		t.Helper()
		if _, stderr, code := w.as(t, who, args); code != cmdutil.ExitGateRefused || !strings.Contains(stderr, want) {
			t.Errorf("%s: exit %d, stderr %q; want 3 saying %q", args, code, stderr, want)
		}
	}
	refused("bob", "approve "+jobID+" --note 'looks right' --sign-key "+aliceKey, "signed the plan")
	refused("bob", "approve "+jobID+" --note 'looks right'", "counts only signed approvals")
	refused("carol", "approve "+jobID+" --note 'looks right' --sign-key "+carolKey, "is not among consumer billing's allowed signers")
	if _, stderr, code := w.replayctl(t, "execute --yes "+jobID); code != cmdutil.ExitGateRefused || !strings.Contains(stderr, "needs 1 approval") {
		t.Fatalf("execute with no counted approval: exit %d %s", code, stderr)
	}

	// Bob signs elsewhere with ssh-keygen, as with a hardware key.
	statement := filepath.Join(dir, "statement.txt")
	stdout, stderr, code := w.as(t, "bob@example.com", "approve "+jobID+" --note 'checked the three charges' --print-statement")
	if code != cmdutil.ExitOK {
		t.Fatalf("--print-statement: exit %d %s", code, stderr)
	}
	writeText(t, statement, stdout)
	if out, err := exec.Command("ssh-keygen", "-Y", "sign", "-n", "replayctl-approval", "-f", bobKey, statement).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen -Y sign: %v\n%s", err, out)
	}
	// The same signature over an edited statement does not verify.
	forged := writeText(t, filepath.Join(dir, "forged.txt"), strings.Replace(stdout, "checked the three charges", "checked nothing", 1))
	refused("bob@example.com", "approve "+jobID+" --statement "+forged+" --signature "+statement+".sig", "does not verify")
	if _, stderr, code := w.as(t, "bob@example.com", "approve "+jobID+" --statement "+statement+" --signature "+statement+".sig"); code != cmdutil.ExitOK {
		t.Fatalf("bob's signed approval: exit %d %s", code, stderr)
	}
	if r := w.statusJSON(t, jobID); r.Approvals == nil || !r.Approvals.Satisfied || !r.Approvals.Verified || len(r.Approvals.Approvals) != 1 {
		rows, _ := w.DB.Query(w.Ctx, "select actor, decision, verdict_id, at::text, expires_at::text, manifest_digest from approvals")
		for rows.Next() {
			var a, d, at, ex, dg string
			var v int64
			rows.Scan(&a, &d, &v, &at, &ex, &dg)
			t.Logf("row %s %s %d %s %s %s", a, d, v, at, ex, dg)
		}
		t.Fatalf("status after bob's signed approval: %+v", r.Approvals)
	}

	// An approval row copied by SQL under another name, with bob's signature, does not count.
	w.exec(t, `insert into approvals (job_id, manifest_digest, verdict_id, actor, decision, note, at, expires_at, signature, signer_key)
		select job_id, manifest_digest, verdict_id, 'carol@example.com', decision, note, at, expires_at, signature, signer_key from approvals`)
	if r := w.statusJSON(t, jobID); r.Approvals == nil || len(r.Approvals.Approvals) != 1 || r.Approvals.Unverified != 1 {
		t.Fatalf("status with a copied signature: %+v; want 1 approval and 1 unverified", r.Approvals)
	}
	w.exec(t, `delete from approvals where actor = 'carol@example.com'`)

	// Lowering needs a policy admin; removing bob voids his approval.
	refused("bob", "policy set --consumer billing --approvals 0 --allowed-signers "+signers+" --sign-key "+bobKey, "lowers it")
	if _, stderr, code := w.replayctl(t, "policy set --consumer billing --approvals 1 --require-signed-plan --allowed-signers "+withoutBob+" --sign-key "+adminKey); code != cmdutil.ExitOK {
		t.Fatalf("the admin removes bob: exit %d %s", code, stderr)
	}
	if _, stderr, code := w.replayctl(t, "execute --yes "+jobID); code != cmdutil.ExitGateRefused || !strings.Contains(stderr, "needs 1 approval") {
		t.Fatalf("execute after bob's key was removed: exit %d %s", code, stderr)
	}
	if _, stderr, code := w.replayctl(t, "policy set --consumer billing --approvals 1 --require-signed-plan --allowed-signers "+signers); code != cmdutil.ExitOK {
		t.Fatalf("adding bob back (a raise, no signature needed): exit %d %s", code, stderr)
	}
	if _, stderr, code := w.replayctl(t, "execute --yes "+jobID); code != cmdutil.ExitOK {
		t.Fatalf("execute with bob's signed approval: exit %d %s", code, stderr)
	}
	w.assertChargedOnce(t, 3)
	if stdout, stderr, code := w.replayctl(t, "log --verify "+jobID); code != cmdutil.ExitOK {
		t.Errorf("log --verify: exit %d\n%s\n%s", code, stdout, stderr)
	}
	// A signed approval edited in the ledger afterwards no longer matches its signature.
	w.exec(t, `update approvals set note = 'checked nothing'`)
	if stdout, stderr, code := w.replayctl(t, "log --verify --json "+jobID); code != cmdutil.ExitGateRefused || !strings.Contains(stdout, "does not match its signature") {
		t.Errorf("log --verify after an edit: exit %d\n%s\n%s", code, stdout, stderr)
	}
}

func (w *execWorld) jobIDOf(t *testing.T, path string) string {
	t.Helper()
	m, err := manifest.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return m.ID
}

func (w *execWorld) exec(t *testing.T, sql string) {
	t.Helper()
	if _, err := w.DB.Exec(w.Ctx, sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}
