package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/user"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/replayctl/replayctl/internal/cmdutil"
	"github.com/replayctl/replayctl/job"
	"github.com/replayctl/replayctl/ledger"
	"github.com/replayctl/replayctl/manifest"
	"github.com/replayctl/replayctl/shadow"
)

// noConnections makes any attempt to reach PostgreSQL or NATS fail the test. Commands take the
// factory's funcs when they are built, so the verbs are built again from the changed factory.
func noConnections(t *testing.T) func(*cmdutil.Factory, *cobra.Command) {
	return failOnConnection(func(what string) { t.Errorf("the command %s", what) })
}

// failOnConnection calls report instead of opening the ledger or connecting to NATS.
func failOnConnection(report func(what string)) func(*cmdutil.Factory, *cobra.Command) {
	return func(f *cmdutil.Factory, root *cobra.Command) {
		f.Ledger = func(context.Context) (*ledger.Store, error) {
			report("opened the ledger")
			return nil, errors.New("no ledger in this test")
		}
		f.JetStream = func(context.Context) (jetstream.JetStream, func(), error) {
			report("connected to NATS")
			return nil, nil, errors.New("no NATS in this test")
		}
		for _, c := range NewCmdRoot(f).Commands() {
			replaceCommand(root, c)
		}
	}
}

func TestNoConnectionsCatchesAConnection(t *testing.T) {
	t.Parallel()
	var caught []string
	path := writeManifest(t, testManifest(t))
	execCommand(t, false, "validate --ledger "+path, failOnConnection(func(what string) { caught = append(caught, what) }))
	if len(caught) == 0 {
		t.Fatal("validate --ledger opened the ledger and noConnections did not notice")
	}
}

func TestHelpNeedsNoConnection(t *testing.T) {
	t.Setenv("REPLAYCTL_DATABASE_URL", "postgres://ops:env-secret@10.255.255.1:5432/ledger")
	for _, args := range []string{
		"--help --database-url postgres://ops:flag-secret@10.255.255.1:5432/ledger --nats-url nats://10.255.255.1:4222",
		"migrate --help --database-url postgres://ops:flag-secret@10.255.255.1:5432/ledger",
		"validate --help",
		"show --help",
		"shadow --help",
		"help validate",
	} {
		t.Run(args, func(t *testing.T) {
			start := time.Now()
			stdout, stderr, code := execCommand(t, false, args, noConnections(t))
			if code != cmdutil.ExitOK {
				t.Fatalf("exit %d, stderr %q", code, stderr)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("help took %v; it must not wait for a connection", d)
			}
			if strings.Contains(stdout+stderr, "secret") {
				t.Errorf("help printed a password:\n%s", stdout)
			}
			if !strings.Contains(stdout, "Usage:") {
				t.Errorf("no usage in:\n%s", stdout)
			}
		})
	}
}

func TestRootHelpExplainsWorkflowAndExitCodes(t *testing.T) {
	t.Parallel()
	stdout, _, code := execCommand(t, false, "--help", noConnections(t))
	if code != cmdutil.ExitOK {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{
		"plan ", "shadow ", "execute ", "Exit codes:",
		"0  done", "1  runtime failure", "2  usage or bad input", "3  a gate refused",
		"4  a guard stopped the run", "5  finished, but items need manual review",
		"replayctl migrate", "replayctl show job.json", "replayctl validate --ledger job.json", "replayctl shadow job.json",
		"--database-url", "--nats-url", "--json", "--actor",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("root help lacks %q", want)
		}
	}
}

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args, wantErr, wantHint string
	}{
		{"valdate job.json", `unknown command "valdate"; did you mean validate?`, "Run 'replayctl --help' for usage."},
		{"exectue job.json", `unknown command "exectue"; did you mean execute?`, "Run 'replayctl --help' for usage."},
		{"recon", `unknown command "recon"; did you mean reconcile?`, "Run 'replayctl --help' for usage."},
		{"frobnicate", `unknown command "frobnicate"`, "Run 'replayctl --help' for usage."},
		{"validate", "exactly one argument", "Run 'replayctl validate --help' for usage."},
		{"validate a.json b.json", "got 2", "Run 'replayctl validate --help' for usage."},
		{"validate --ledgr job.json", "unknown flag: --ledgr", "Run 'replayctl validate --help' for usage."},
		{"show", "exactly one argument", "Run 'replayctl show --help' for usage."},
		{"migrate now", "takes no arguments", "Run 'replayctl migrate --help' for usage."},
		{"--json=maybe show job.json", "invalid argument", "Run 'replayctl show --help' for usage."},
	}
	for _, tt := range tests {
		t.Run(tt.args, func(t *testing.T) {
			stdout, stderr, code := execCommand(t, false, tt.args, noConnections(t))
			if code != cmdutil.ExitUsage {
				t.Errorf("exit %d, want %d", code, cmdutil.ExitUsage)
			}
			if !strings.HasPrefix(stderr, "replayctl: ") || !strings.Contains(stderr, tt.wantErr) || !strings.Contains(stderr, tt.wantHint) {
				t.Errorf("stderr %q, want %q and the hint %q", stderr, tt.wantErr, tt.wantHint)
			}
			if stdout != "" {
				t.Errorf("stdout %q, want nothing without --json", stdout)
			}
		})
	}
}

// jsonError decodes stdout as the one error object of a failed --json run.
func jsonError(t *testing.T, stdout string) (msg string, code int) {
	t.Helper()
	var got struct {
		APIVersion string  `json:"apiVersion"`
		Kind       string  `json:"kind"`
		Error      *string `json:"error"`
		ExitCode   *int    `json:"exitCode"`
	}
	dec := json.NewDecoder(strings.NewReader(stdout))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&got); err != nil || dec.More() {
		t.Fatalf("stdout is not one error object (%v):\n%s", err, stdout)
	}
	if got.Error == nil || got.ExitCode == nil || got.APIVersion != cmdutil.OutputAPIVersion || got.Kind != "Error" {
		t.Fatalf("error object lacks error or exitCode: %s", stdout)
	}
	return *got.Error, *got.ExitCode
}

func TestJSONErrorObject(t *testing.T) {
	t.Parallel()
	t.Run("bad input", func(t *testing.T) {
		stdout, stderr, code := runCommand(t, false, "--json show /nonexistent/job.json")
		msg, jsonCode := jsonError(t, stdout)
		if code != cmdutil.ExitUsage || jsonCode != cmdutil.ExitUsage {
			t.Errorf("exit %d, exitCode %d; want %d", code, jsonCode, cmdutil.ExitUsage)
		}
		if !strings.Contains(msg, "/nonexistent/job.json") || !strings.Contains(stderr, "replayctl: "+msg) {
			t.Errorf("error %q, stderr %q", msg, stderr)
		}
	})
	t.Run("flag error after --json", func(t *testing.T) {
		stdout, _, code := runCommand(t, false, "validate --json --bogus job.json")
		if _, jsonCode := jsonError(t, stdout); code != cmdutil.ExitUsage || jsonCode != cmdutil.ExitUsage {
			t.Errorf("exit %d, exitCode %d", code, jsonCode)
		}
	})
	t.Run("flag error before --json", func(t *testing.T) {
		stdout, _, code := runCommand(t, false, "validate --bogus --json job.json")
		if _, jsonCode := jsonError(t, stdout); code != cmdutil.ExitUsage || jsonCode != cmdutil.ExitUsage {
			t.Errorf("exit %d, exitCode %d", code, jsonCode)
		}
	})
	t.Run("runtime failure hides the password", func(t *testing.T) {
		url := "postgres://ops:s3cret-pw@127.0.0.1:1/ledger?connect_timeout=2"
		stdout, stderr, code := runCommand(t, false, "--json migrate --database-url "+url)
		msg, jsonCode := jsonError(t, stdout)
		if code != cmdutil.ExitFailure || jsonCode != cmdutil.ExitFailure {
			t.Errorf("exit %d, exitCode %d; want %d", code, jsonCode, cmdutil.ExitFailure)
		}
		if strings.Contains(stdout+stderr, "s3cret-pw") {
			t.Errorf("the password was printed:\nstdout %s\nstderr %s", stdout, stderr)
		}
		if !strings.Contains(msg, "check --database-url") {
			t.Errorf("error %q does not say what to check", msg)
		}
	})
}

func TestExitCodes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  error
		want int
	}{
		{nil, cmdutil.ExitOK},
		{errors.New("connection refused"), cmdutil.ExitFailure},
		{cmdutil.UsageErrorf("bad flag"), cmdutil.ExitUsage},
		{fmt.Errorf("manifest job.json: %w", manifest.ErrTampered), cmdutil.ExitGateRefused},
		{&manifest.ValidationError{}, cmdutil.ExitUsage},
		{fmt.Errorf("validate: %w", job.ErrNotRecorded), cmdutil.ExitUsage},
		// One refusal, three callers: a file naming a job never recorded is bad input, one
		// recorded with another digest a gate; shadow refuses both as a gate.
		{fmt.Errorf("validate: %w", &job.RecordedError{JobID: "j", Digest: "sha256:a"}), cmdutil.ExitUsage},
		{fmt.Errorf("validate: %w", &job.RecordedError{JobID: "j", Digest: "sha256:a", Recorded: "sha256:b"}), cmdutil.ExitGateRefused},
		{fmt.Errorf("%w: %w", shadow.ErrJobMismatch, &job.RecordedError{JobID: "j", Digest: "sha256:a"}), cmdutil.ExitGateRefused},
		{fmt.Errorf("status: %w", ledger.ErrJobNotFound), cmdutil.ExitUsage},
		{&cmdutil.ExitError{Code: cmdutil.ExitGateRefused, Err: errors.New("confirmation declined")}, cmdutil.ExitGateRefused},
		{fmt.Errorf("execute: %w", &cmdutil.ExitError{Code: cmdutil.ExitNeedsReview, Err: manifest.ErrInvalid}), cmdutil.ExitNeedsReview},
	}
	for _, tt := range tests {
		if got := cmdutil.ExitCode(tt.err); got != tt.want {
			t.Errorf("exitCode(%v) = %d, want %d", tt.err, got, tt.want)
		}
	}
}

func TestGlobalFlagDefaults(t *testing.T) {
	t.Setenv("REPLAYCTL_DATABASE_URL", "")
	t.Setenv("DATABASE_URL", "")
	t.Setenv("NATS_URL", "")
	t.Setenv("USER", "")
	var f *cmdutil.Factory
	capture := func(got *cmdutil.Factory, _ *cobra.Command) { f = got }
	if _, stderr, code := execCommand(t, false, "--help", capture); code != cmdutil.ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if got := f.DatabaseURL(); got != cmdutil.DefaultDatabaseURL {
		t.Errorf("DatabaseURL() = %q", got)
	}
	if got := f.NATSURL(); got != cmdutil.DefaultNATSURL {
		t.Errorf("NATSURL() = %q", got)
	}
	// cron, systemd units and container entrypoints run without $USER: the audit log still
	// names who ran the command.
	want := "uid " + strconv.Itoa(os.Getuid())
	if u, err := user.Current(); err == nil && u.Username != "" {
		want = u.Username
	}
	if got := f.Actor(); got != want || got == "unknown" {
		t.Errorf("Actor() with $USER unset = %q, want the OS user %q", got, want)
	}

	t.Setenv("DATABASE_URL", "postgres:///from-database-url")
	if got := f.DatabaseURL(); got != "postgres:///from-database-url" {
		t.Errorf("DatabaseURL() = %q, want $DATABASE_URL", got)
	}
	t.Setenv("REPLAYCTL_DATABASE_URL", "postgres:///from-replayctl")
	t.Setenv("NATS_URL", "nats://from-env:4222")
	t.Setenv("USER", "bob")
	if f.DatabaseURL() != "postgres:///from-replayctl" || f.NATSURL() != "nats://from-env:4222" || f.Actor() != "bob" {
		t.Errorf("env not read: %q %q %q", f.DatabaseURL(), f.NATSURL(), f.Actor())
	}

	args := "--database-url postgres:///flag --nats-url nats://flag:4222 --actor carol --json --help"
	if _, stderr, code := execCommand(t, false, args, capture); code != cmdutil.ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if f.DatabaseURL() != "postgres:///flag" || f.NATSURL() != "nats://flag:4222" || f.Actor() != "carol" || !f.JSON() {
		t.Errorf("flags not read: %q %q %q %v", f.DatabaseURL(), f.NATSURL(), f.Actor(), f.JSON())
	}
}

func TestNATSConnectFailureNamesTheFlag(t *testing.T) {
	t.Parallel()
	f := cmdutil.NewFactory(nil)
	flags := pflag.NewFlagSet("replayctl", pflag.ContinueOnError)
	f.BindGlobalFlags(flags)
	if err := flags.Parse([]string{"--nats-url", "nats://ops:nats-secret@127.0.0.1:1"}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, _, err := f.JetStream(ctx)
	if err == nil {
		t.Fatal("connected to a closed port")
	}
	if msg := err.Error(); !strings.Contains(msg, "check --nats-url / NATS_URL") || strings.Contains(msg, "nats-secret") {
		t.Errorf("error %q: want the flag named and no password", msg)
	}
	if cmdutil.ExitCode(err) != cmdutil.ExitFailure {
		t.Errorf("exit code %d, want %d", cmdutil.ExitCode(err), cmdutil.ExitFailure)
	}
}

func TestVersionNamesModuleCommitAndGo(t *testing.T) {
	t.Parallel()
	stdout, stderr, code := execCommand(t, false, "--version", noConnections(t))
	if code != cmdutil.ExitOK {
		t.Fatalf("--version: exit %d:\n%s", code, stderr)
	}
	if !strings.HasPrefix(stdout, "replayctl ") || !strings.Contains(stdout, "built with go1.") || !strings.Contains(stdout, "commit ") {
		t.Fatalf("--version printed %q; want the module version, the commit and the Go version", stdout)
	}
	bi := &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v1.2.3"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "2df672b0123456789abcdef"}, {Key: "vcs.time", Value: "2026-12-04T04:00:00Z"}, {Key: "vcs.modified", Value: "true"}}}
	if got, want := formatVersion(bi), "v1.2.3, commit 2df672b01234 (2026-12-04T04:00:00Z), modified, built with go1.26.0"; got != want {
		t.Errorf("formatVersion = %q, want %q", got, want)
	}
}

// help knows the environment as a topic, and an unknown topic is a usage error, not a usage text.
func TestHelpEnvironmentAndAnUnknownTopic(t *testing.T) {
	t.Parallel()
	if stdout, _, code := runCommand(t, false, "help environment"); code != cmdutil.ExitOK || !strings.Contains(stdout, "REPLAYCTL_DATABASE_URL") {
		t.Errorf("help environment: exit %d\n%s", code, stdout)
	}
	if _, stderr, code := runCommand(t, false, "help nosuchtopic"); code != cmdutil.ExitUsage || !strings.Contains(stderr, `unknown help topic "nosuchtopic"`) {
		t.Errorf("help nosuchtopic: exit %d\n%s", code, stderr)
	}
	if stdout, _, code := runCommand(t, false, "help plan"); code != cmdutil.ExitOK || !strings.Contains(stdout, "--dry-run") {
		t.Errorf("help plan: exit %d\n%s", code, stdout)
	}
}
