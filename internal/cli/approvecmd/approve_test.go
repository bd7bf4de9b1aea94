package approvecmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/replayctl/replayctl/approval"
	"github.com/replayctl/replayctl/internal/cli/clitest"
	"github.com/replayctl/replayctl/internal/testenv/sshtest"
)

func TestApproveFlagsReachTheRunWithoutOpeningTheLedger(t *testing.T) {
	var got *ApproveOptions
	err := clitest.Run(NewCmdApprove(clitest.Factory(t), approval.Rejected, func(o *ApproveOptions) error { got = o; return nil }),
		"job-1", "--note", "wait for the provider", "--sign-key", "/keys/id")
	if err != nil || got == nil {
		t.Fatalf("reject: %v", err)
	}
	r := got.Request
	if r.JobID != "job-1" || r.Decision != approval.Rejected || r.Note != "wait for the provider" || r.Actor != "bob" || got.SignKey != "/keys/id" {
		t.Fatalf("options %+v (sign key %q)", r, got.SignKey)
	}
}

// The signing flags' combinations are refused before anything is opened, each saying which.
func TestApproveRefusesSigningFlagsThatDoNotGoTogether(t *testing.T) {
	for _, c := range []struct {
		opts ApproveOptions
		want string
	}{
		{ApproveOptions{}, "--note is required"},
		{ApproveOptions{StatementPath: "s.txt"}, "--statement and --signature go together"},
		{ApproveOptions{StatementPath: "s.txt", SignaturePath: "s.sig", SignKey: "k"}, "leave out --sign-key"},
		{ApproveOptions{PrintStatement: true, SignKey: "k"}, "give one"},
		{ApproveOptions{SignKey: filepath.Join(t.TempDir(), "missing")}, "--sign-key"},
	} {
		opts := c.opts
		if opts.StatementPath == "" && c.want != "--note is required" {
			opts.Request.Note = "checked"
		}
		if err := signingFlags(&opts, &opts.Request); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.opts, err, c.want)
		}
	}
}

// A key made by ssh-keygen is loaded into the request; its statement and signature files too.
func TestApproveLoadsTheKeyAndTheFilesItIsGiven(t *testing.T) {
	dir := t.TempDir()
	key, _ := sshtest.Key(t, dir, "id", "ed25519")
	opts := ApproveOptions{SignKey: key}
	opts.Request.Note = "checked"
	if err := signingFlags(&opts, &opts.Request); err != nil || opts.Request.Signer == nil {
		t.Fatalf("--sign-key: %v", err)
	}
	for _, f := range []string{"s.txt", "s.txt.sig"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(f), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	opts = ApproveOptions{StatementPath: filepath.Join(dir, "s.txt"), SignaturePath: filepath.Join(dir, "s.txt.sig")}
	if err := signingFlags(&opts, &opts.Request); err != nil || string(opts.Request.Statement) != "s.txt" || string(opts.Request.Signature) != "s.txt.sig" {
		t.Fatalf("--statement/--signature: %v %+v", err, opts.Request)
	}
}
