package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"

	"github.com/replayctl/replayctl/internal/cmdutil"
	"github.com/replayctl/replayctl/internal/testenv/natstest"
	"github.com/replayctl/replayctl/internal/testenv/pgtest"
)

// securedDLQ starts a NATS server that takes only user billing with the test password, holding
// a DLQ stream of three dead-lettered charges, and a migrated ledger; it returns both URLs.
func securedDLQ(t *testing.T) (dbURL, natsURL string) {
	t.Helper()
	dbURL = pgtest.URL(t)
	if _, stderr, code := runCommand(t, false, "migrate --database-url '"+dbURL+"'"); code != cmdutil.ExitOK {
		t.Fatalf("migrate: exit %d: %s", code, stderr)
	}
	natsURL = natstest.StartSecured(t, &server.Options{Username: "billing", Password: secret})
	nc, err := nats.Connect(natsURL, nats.UserInfo("billing", secret))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "DLQ", Subjects: []string{"dlq.>"}}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		msg := nats.NewMsg("dlq.billing")
		msg.Data = fmt.Appendf(nil, `{"orderId":"ord-%d"}`, i)
		msg.Header.Set("Event-Id", fmt.Sprintf("evt-%d", i))
		msg.Header.Set("Dlq-Reason", "provider timeout")
		msg.Header.Set("Dlq-Original-Subject", "billing.charge.requested")
		if _, err := js.PublishMsg(ctx, msg); err != nil {
			t.Fatal(err)
		}
	}
	return dbURL, natsURL
}

// saveContext writes a natscli context in a fresh XDG_CONFIG_HOME, as `nats context save` does.
func saveContext(t *testing.T, name string, fields map[string]string) {
	t.Helper()
	xdg := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", xdg)
	dir := filepath.Join(xdg, "nats", "context")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(fields)
	if err := os.WriteFile(filepath.Join(dir, name+".json"), data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestPlanConnectsThroughANatsCLIContext plans against a password-protected server through a
// natscli context, then shows how wrong or missing credentials are refused: exit 2, the server
// and the credentials' sources named, the password nowhere.
func TestPlanConnectsThroughANatsCLIContext(t *testing.T) {
	for _, env := range []string{"NATS_URL", "NATS_USER", "NATS_PASSWORD", "NATS_TOKEN", "NATS_CREDS", "NATS_NKEY", "NATS_CONTEXT"} {
		t.Setenv(env, "")
	}
	dbURL, natsURL := securedDLQ(t)
	saveContext(t, "prod", map[string]string{"url": natsURL, "user": "billing", "password": secret, "description": "billing on prod"})
	out := filepath.Join(t.TempDir(), "job.json")
	plan := "plan --consumer billing --new-consumer --stream DLQ --reason '" + planReason + "' --database-url '" + dbURL + "' --actor alice "
	seen := map[string]string{}

	stdout, stderr, code := runCommand(t, false, plan+"--context prod -o "+out)
	if code != cmdutil.ExitOK {
		t.Fatalf("plan --context prod: exit %d:\n%s\n%s", code, stdout, stderr)
	}
	seen["plan stdout"], seen["plan stderr"] = stdout, stderr
	manifestData, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	seen["manifest"] = string(manifestData)

	for name, c := range map[string]struct {
		args, env, want string
	}{
		"wrong password": {"--context prod --password wrong-" + secret, "",
			"replayctl: NATS at " + natsURL + ` refused the credentials, user "billing" (context "prod") with a password (--password): ` +
				`nats: Authorization Violation; check them (--user/--password, --token, --creds, --nkey, the NATS_* variables or the NATS context "prod" (`},
		"no credentials": {"--nats-url " + natsURL, "",
			"replayctl: NATS at " + natsURL + " refused the credentials, no credentials: nats: Authorization Violation"},
		"token from the environment": {"--context prod", "NATS_TOKEN",
			"replayctl: NATS at " + natsURL + " refused the credentials, a token ($NATS_TOKEN): nats: Authorization Violation"},
		"unknown context": {"--context staging", "",
			`replayctl: unknown NATS context "staging" (--context): no `},
	} {
		for _, asJSON := range []string{"", "--json "} {
			if c.env != "" {
				t.Setenv(c.env, "wrong-"+secret)
			}
			stdout, stderr, code := runCommand(t, false, asJSON+plan+c.args+" -o "+filepath.Join(t.TempDir(), "job.json"))
			if c.env != "" {
				t.Setenv(c.env, "")
			}
			if code != cmdutil.ExitUsage || !strings.HasPrefix(stderr, c.want) {
				t.Errorf("%s: exit %d, want 2 and stderr starting\n%s\ngot:\n%s", name, code, c.want, stderr)
			}
			if asJSON != "" && !strings.Contains(stdout, `"exitCode": 2`) {
				t.Errorf("%s --json: stdout %s", name, stdout)
			}
			seen[name+" "+asJSON+"stdout"], seen[name+" "+asJSON+"stderr"] = stdout, stderr
		}
	}
	assertNoSecret(t, seen)
}

// TestNATSCredentialsNeverPrinted presents every kind of NATS credential to a server that refuses
// it, and to none at all, and types an NKey seed where an argument goes: the password, the token,
// the seeds and the creds file's JWT appear in no output, with or without --json.
func TestNATSCredentialsNeverPrinted(t *testing.T) {
	for _, env := range []string{"NATS_URL", "NATS_USER", "NATS_PASSWORD", "NATS_TOKEN", "NATS_CREDS", "NATS_NKEY", "NATS_CONTEXT"} {
		t.Setenv(env, "")
	}
	dbURL, natsURL := securedDLQ(t)
	dir := t.TempDir()
	user, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	seed, _ := user.Seed()
	nkeyFile := filepath.Join(dir, "billing.nk")
	credsUser, _ := nkeys.CreateUser()
	credsSeed, _ := credsUser.Seed()
	const userJWT = "eyJ0eXAiOiJKV1QiLCJhbGciOiJlZDI1NTE5LW5rZXkifQ.eyJqdGkiOiJDT05ORUNUMThURVNUIiwic3ViIjoiVUFCQyJ9.c2lnbmVkLWJ5LW5vYm9keQ"
	credsFile := filepath.Join(dir, "billing.creds")
	creds := "-----BEGIN NATS USER JWT-----\n" + userJWT + "\n------END NATS USER JWT------\n\n" +
		"-----BEGIN USER NKEY SEED-----\n" + string(credsSeed) + "\n------END USER NKEY SEED------\n"
	for path, data := range map[string][]byte{nkeyFile: seed, credsFile: []byte(creds)} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	saveContext(t, "prod", map[string]string{"url": natsURL, "user": "billing", "password": "ctx-" + secret})
	secrets := []string{secret, string(seed), string(credsSeed), userJWT}

	plan := "plan --consumer billing --new-consumer --stream DLQ --reason '" + planReason + "' --database-url '" + dbURL + "' -o " + filepath.Join(dir, "job.json")
	for _, args := range []string{
		plan + " --context prod",
		plan + " --context prod --password wrong-" + secret,
		plan + " --nats-url " + natsURL + " --token " + secret,
		plan + " --nats-url " + natsURL + " --user " + secret,
		plan + " --nats-url " + natsURL + " --nkey " + nkeyFile,
		plan + " --nats-url " + natsURL + " --creds " + credsFile,
		plan + " --nats-url nats://127.0.0.1:1 --creds " + credsFile,
		plan + " --nats-url nats://127.0.0.1:1 --user alice --password " + secret,
		"status --database-url '" + dbURL + "' " + string(seed),
		"validate " + userJWT,
	} {
		for _, asJSON := range []string{"", "--json "} {
			stdout, stderr, code := runCommand(t, false, asJSON+args)
			if code == cmdutil.ExitOK {
				t.Errorf("%s: exit 0 with refused credentials", args)
			}
			for _, s := range secrets {
				for name, text := range map[string]string{"stdout": stdout, "stderr": stderr} {
					if strings.Contains(text, s) || strings.Contains(text, "ctx-"+secret) {
						t.Errorf("%s: %s shows a secret:\n%s", args, name, text)
					}
				}
			}
		}
	}
}
