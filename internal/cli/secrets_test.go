package cli

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/replayctl/replayctl/internal/cmdutil"
	"github.com/replayctl/replayctl/internal/testenv/pgtest"
	"github.com/replayctl/replayctl/manifest"
)

// secret is the password every test URL carries; it must never be printed or stored.
const secret = "S3cr3tPW"

// assertNoSecret fails if any of texts holds secret, naming where.
func assertNoSecret(t *testing.T, where map[string]string) {
	t.Helper()
	for name, text := range where {
		if strings.Contains(text, secret) {
			i := strings.Index(text, secret)
			t.Errorf("the password appears in %s: …%s…", name, text[max(0, i-80):min(len(text), i+80)])
		}
	}
}

// TestDatabasePasswordNeverPrinted points every ledger command at an unreachable server through
// each way pgx accepts a password, and checks the password is in neither stream, with or without
// --json, while the error still says where it tried to connect.
func TestDatabasePasswordNeverPrinted(t *testing.T) {
	t.Parallel()
	job := writeManifest(t, testManifest(t))
	commands := []string{
		"migrate",
		"plan --consumer billing --stream DLQ --reason '" + planReason + "' -o " + filepath.Join(t.TempDir(), "job.json"),
		"validate --ledger " + job,
		"shadow " + job,
		"execute --dry-run " + job,
		"status job-20261202-test01",
		"pause job-20261202-test01 --reason 'provider latency'",
	}
	urls := []struct{ name, url string }{
		{"URL userinfo", "postgres://replay:" + secret + "@127.0.0.1:1/test"},
		{"postgresql URL", "postgresql://replay:" + secret + "@127.0.0.1:1/test?sslmode=disable"},
		{"query parameter", "postgres://replay@127.0.0.1:1/test?password=" + secret},
		{"sslpassword parameter", "postgres://replay@127.0.0.1:1/test?sslpassword=" + secret + "&sslmode=disable"},
		{"percent-encoded", "postgres://replay:" + url.PathEscape("S3cr") + "%33tPW@127.0.0.1:1/test"},
		{"unescaped slash", "postgres://replay:ab/" + secret + "@127.0.0.1:1/test"},
		{"malformed port", "postgres://replay:" + secret + "@127.0.0.1:notaport/test"},
		{"key=value", "host=127.0.0.1 port=1 user=replay password=" + secret + " dbname=test"},
		{"key=value quoted", "host=127.0.0.1 port=1 user=replay password='" + secret + " x' dbname=test"},
		{"key=value malformed", "host=127.0.0.1 port=1 password='" + secret},
	}
	for _, u := range urls {
		for _, c := range commands {
			verb, _, _ := strings.Cut(c, " ")
			for _, asJSON := range []string{"", "--json "} {
				t.Run(u.name+"/"+asJSON+verb, func(t *testing.T) {
					stdout, stderr, code := execCommand(t, false, asJSON+c+" --database-url \""+u.url+"\" --nats-url nats://127.0.0.1:1", nil)
					if code != cmdutil.ExitFailure && code != cmdutil.ExitUsage {
						t.Errorf("exit %d, want 1 (unreachable) or 2 (malformed URL)", code)
					}
					if !strings.Contains(stderr, "--database-url") {
						t.Errorf("stderr does not say which setting to check:\n%s", stderr)
					}
					assertNoSecret(t, map[string]string{"stdout": stdout, "stderr": stderr})
				})
			}
		}
	}
}

// TestDatabasePasswordFromEnvironmentNeverPrinted covers the URL given by REPLAYCTL_DATABASE_URL or
// DATABASE_URL, which --help must not show either.
func TestDatabasePasswordFromEnvironmentNeverPrinted(t *testing.T) {
	for _, env := range []string{"REPLAYCTL_DATABASE_URL", "DATABASE_URL"} {
		t.Run(env, func(t *testing.T) {
			t.Setenv("REPLAYCTL_DATABASE_URL", "")
			t.Setenv(env, "postgres://replay:"+secret+"@127.0.0.1:1/test")
			for _, args := range []string{"--json status job-1", "status job-1", "migrate", "plan --help", "--help"} {
				stdout, stderr, code := runCommand(t, false, args)
				if strings.Contains(args, "help") != (code == cmdutil.ExitOK) {
					t.Errorf("%s: exit %d", args, code)
				}
				if code != cmdutil.ExitOK && !strings.Contains(stderr, "127.0.0.1:1") {
					t.Errorf("%s: stderr does not say where it tried to connect:\n%s", args, stderr)
				}
				assertNoSecret(t, map[string]string{args + " stdout": stdout, args + " stderr": stderr})
			}
		})
	}
}

// TestNATSPasswordNeverPrinted gives NATS credentials in the URL of a server that is not there, in
// every form nats.go reads one: user and password or a token, with or without a scheme, in the
// second entry of a list, and in an entry nats.go cannot parse (which its error quotes).
func TestNATSPasswordNeverPrinted(t *testing.T) {
	t.Parallel()
	dbURL, _ := newLedgerAndDLQ(t)
	for _, natsURL := range []string{
		"nats://alice:" + secret + "@127.0.0.1:1",
		"nats://" + secret + "@127.0.0.1:1",
		"nats://127.0.0.1:2,nats://alice:" + secret + "@127.0.0.1:1",
		"natsuser:" + secret + "@127.0.0.1:1",
		secret + "@127.0.0.1:1",
		"nats://127.0.0.1:2, natsuser:" + secret + "@127.0.0.1:1",
		"127.0.0.1:2," + secret + "@127.0.0.1:1",
		"natsuser:pa ss" + secret + "@127.0.0.1:1",
		"nats://alice:ab/" + secret + "@127.0.0.1:1",
	} {
		for _, asJSON := range []string{"", "--json "} {
			stdout, stderr, code := runCommand(t, false, asJSON+"plan --consumer billing --stream DLQ --reason '"+planReason+
				"' -o "+filepath.Join(t.TempDir(), "job.json")+" --database-url '"+dbURL+"' --nats-url '"+natsURL+"'")
			if code != cmdutil.ExitFailure || !strings.Contains(stderr, "--nats-url") {
				t.Errorf("%s: exit %d, want 1 with the setting to check:\n%s", natsURL, code, stderr)
			}
			assertNoSecret(t, map[string]string{natsURL + " stdout": stdout, natsURL + " stderr": stderr})
		}
	}
}

// TestPlanStoresNoPassword plans for real with a password in both URLs (PostgreSQL's trust
// authentication and a NATS server without authorization accept and ignore them), and checks the
// password reaches neither the output, the manifest, nor any row of the ledger.
func TestPlanStoresNoPassword(t *testing.T) {
	t.Parallel()
	dbURL, env := newLedgerAndDLQ(t)
	for i := range 3 {
		msg := nats.NewMsg("dlq.billing")
		msg.Data = fmt.Appendf(nil, `{"orderId":"ord-%d"}`, i)
		msg.Header.Set("Event-Id", fmt.Sprintf("evt-%d", i))
		msg.Header.Set("Dlq-Reason", "provider timeout")
		msg.Header.Set("Dlq-Original-Subject", "billing.charge.requested")
		if _, err := env.JS.PublishMsg(t.Context(), msg); err != nil {
			t.Fatal(err)
		}
	}
	withPassword := dbURL + "&password=" + secret
	natsURL := strings.Replace(env.Server.ClientURL(), "nats://", "nats://alice:"+secret+"@", 1)
	out := filepath.Join(t.TempDir(), "job.json")
	flags := " --database-url '" + withPassword + "' --nats-url '" + natsURL + "' --actor alice"
	seen := map[string]string{}
	jobID := ""
	for _, args := range []string{
		"plan --consumer billing --new-consumer --stream DLQ --reason '" + planReason + "' -o " + out,
		"--json validate --ledger " + out,
		"show " + out,
		"status ",
	} {
		if args == "status " {
			args += jobID
		}
		stdout, stderr, code := runCommand(t, false, args+flags)
		if code != cmdutil.ExitOK {
			t.Fatalf("%s: exit %d:\n%s\n%s", args, code, stdout, stderr)
		}
		seen[args+" stdout"], seen[args+" stderr"] = stdout, stderr
		if jobID == "" {
			m, err := manifest.Load(out)
			if err != nil {
				t.Fatal(err)
			}
			jobID = m.ID
		}
	}
	// An unreachable host after a successful plan: the error names the URL, redacted.
	stdout, stderr, _ := runCommand(t, false, "status job-1 --database-url '"+strings.Replace(withPassword, "host=/var/run/postgresql", "host=127.0.0.1&port=1", 1)+"'")
	seen["failed status stdout"], seen["failed status stderr"] = stdout, stderr
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	seen["manifest"] = string(data)
	db := pgtest.PoolAt(t, dbURL)
	for _, table := range []string{"jobs", "job_targets", "audit", "effect_versions", "effects", "shadow_verdicts"} {
		var dump string
		if err := db.QueryRow(t.Context(), fmt.Sprintf(`select coalesce(string_agg(x::text, '|'), '') from %s x`, table)).Scan(&dump); err != nil {
			t.Fatal(err)
		}
		seen["table "+table] = dump
	}
	if !strings.Contains(seen["table audit"], "plan") {
		t.Fatalf("the audit log has no plan entry to check: %q", seen["table audit"])
	}
	assertNoSecret(t, seen)
}

// TestMisplacedURLNeverEchoed covers a URL that is not the configured one: typed as an argument
// (`--database-url= URL` leaves the URL positional) and quoted back by a usage error, a missing
// file or an unknown job.
func TestMisplacedURLNeverEchoed(t *testing.T) {
	t.Parallel()
	dbURL, _ := newLedgerAndDLQ(t)
	for _, misplaced := range []string{
		"postgres://replay:" + secret + "@127.0.0.1:1/test",
		"postgres://replay@127.0.0.1:1/test?sslmode=disable&password=" + secret,
		"host=127.0.0.1 password=" + secret,
		"nats://" + secret + "@127.0.0.1:4222",
		"nats://alice:" + secret + "@127.0.0.1:4222",
	} {
		for _, args := range []string{
			"plan --database-url= '" + misplaced + "'",
			"status --database-url '" + dbURL + "' '" + misplaced + "'",
			"validate '" + misplaced + "'",
			"--json cancel --database-url '" + dbURL + "' --reason 'wrong filter' '" + misplaced + "'",
		} {
			stdout, stderr, code := runCommand(t, false, args)
			if code != cmdutil.ExitUsage {
				t.Errorf("%s: exit %d, want 2:\n%s", args, code, stderr)
			}
			if !strings.Contains(stderr, "xxxxx") {
				t.Errorf("%s: stderr does not show the value redacted:\n%s", args, stderr)
			}
			assertNoSecret(t, map[string]string{args + " stdout": stdout, args + " stderr": stderr})
		}
	}
}

// A database URL that does not parse is bad input (exit 2), not a runtime failure worth retrying;
// the message says what is wrong and where to fix it, without the password.
func TestUnparseableDatabaseURLIsAUsageError(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{
		"postgres://replay:" + secret + "@127.0.0.1:notaport/test",
		"postgres://replay:" + secret + "%zz@127.0.0.1/test",
		"host=127.0.0.1 port=1 password='" + secret,
	} {
		for _, asJSON := range []string{"", "--json "} {
			stdout, stderr, code := runCommand(t, false, asJSON+"migrate --database-url \""+bad+"\"")
			if code != cmdutil.ExitUsage {
				t.Errorf("%q: exit %d, want %d:\n%s", bad, code, cmdutil.ExitUsage, stderr)
			}
			if !strings.Contains(stderr, "invalid ledger database URL") || !strings.Contains(stderr, "check --database-url") {
				t.Errorf("%q: stderr does not say the URL is invalid and where to fix it:\n%s", bad, stderr)
			}
			if asJSON != "" && !strings.Contains(stdout, `"exitCode": 2`) {
				t.Errorf("%q: --json stdout %q", bad, stdout)
			}
			assertNoSecret(t, map[string]string{"stdout": stdout, "stderr": stderr})
		}
	}
}
