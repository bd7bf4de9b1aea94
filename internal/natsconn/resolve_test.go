package natsconn

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// secret stands for every password and token in these tests; no message may carry it.
const secret = "S3cr3tPW"

// fakeEnv is an environment for Resolve: XDG_CONFIG_HOME is a fresh directory unless vars say
// otherwise.
func fakeEnv(t *testing.T, vars map[string]string) func(string) string {
	t.Helper()
	all := map[string]string{"XDG_CONFIG_HOME": t.TempDir()}
	for k, v := range vars {
		all[k] = v
	}
	return func(name string) string { return all[name] }
}

// writeContext writes a natscli context file name.json under getenv's XDG_CONFIG_HOME, as
// `nats context save` does, and selects it when selected is true.
func writeContext(t *testing.T, getenv func(string) string, name, body string, selected bool) string {
	t.Helper()
	dir := filepath.Join(getenv("XDG_CONFIG_HOME"), "nats", "context")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name+".json")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	if selected {
		if err := os.WriteFile(filepath.Join(dir, "..", "context.txt"), []byte(name+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// touch creates an empty file in t's temporary directory and returns its path.
func touch(t *testing.T, name string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestResolveWithNothingGivenIsTheLocalServerWithoutCredentials(t *testing.T) {
	s, err := Resolve(Flags{}, fakeEnv(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	if s.Servers() != DefaultURL || s.Auth() != "no credentials" || s.Context() != "" || len(s.Notes()) != 0 {
		t.Fatalf("settings %+v", s)
	}
}

func TestResolveTakesFlagThenEnvironmentThenContextFieldByField(t *testing.T) {
	getenv := fakeEnv(t, map[string]string{"NATS_CONTEXT": "prod", "NATS_CA": touch(t, "env-ca.pem")})
	writeContext(t, getenv, "prod", `{"url": "nats://prod-1:4222,nats://prod-2:4222", "user": "billing", "password": "`+secret+`",
		"cert": "$CERTS/client.pem", "key": "$CERTS/client-key.pem", "ca": "/nonexistent/ca.pem", "description": "production"}`, false)
	certs := t.TempDir()
	for _, f := range []string{"client.pem", "client-key.pem"} {
		if err := os.WriteFile(filepath.Join(certs, f), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	withCerts := func(name string) string {
		if name == "CERTS" {
			return certs
		}
		return getenv(name)
	}

	s, err := Resolve(Flags{}, withCerts)
	if err != nil {
		t.Fatal(err)
	}
	if s.Servers() != "nats://prod-1:4222,nats://prod-2:4222" || s.Context() != "prod" {
		t.Fatalf("servers %q context %q", s.Servers(), s.Context())
	}
	want := `user "billing" (context "prod") with a password (context "prod"), client certificate ` + filepath.Join(certs, "client.pem") +
		` (context "prod"), CA ` + getenv("NATS_CA") + ` ($NATS_CA)`
	if s.Auth() != want {
		t.Fatalf("auth\n got %s\nwant %s", s.Auth(), want)
	}

	// A flag beats the environment and the context; a credential given outside the context
	// replaces all of the context's.
	s, err = Resolve(Flags{URL: "nats://127.0.0.1:5222", Token: secret, TLSCA: touch(t, "flag-ca.pem")}, withCerts)
	if err != nil {
		t.Fatal(err)
	}
	if s.Servers() != "nats://127.0.0.1:5222" || !strings.HasPrefix(s.Auth(), "a token (--token), client certificate") ||
		!strings.Contains(s.Auth(), "flag-ca.pem (--tlsca)") {
		t.Fatalf("servers %q auth %s", s.Servers(), s.Auth())
	}
	if len(s.Notes()) != 1 || !strings.Contains(s.Notes()[0], `--nats-url overrides the url of NATS context "prod"`) {
		t.Fatalf("notes %q", s.Notes())
	}
}

func TestResolveReadsTheContextNatsCLISelected(t *testing.T) {
	getenv := fakeEnv(t, nil)
	writeContext(t, getenv, "staging", `{"url": "nats://staging:4222", "token": "env://STAGING_TOKEN"}`, true)
	withToken := func(name string) string {
		if name == "STAGING_TOKEN" {
			return secret
		}
		return getenv(name)
	}
	s, err := Resolve(Flags{}, withToken)
	if err != nil {
		t.Fatal(err)
	}
	if s.Servers() != "nats://staging:4222" || s.Context() != "staging" || s.Auth() != `a token (context "staging")` || s.token.value != secret {
		t.Fatalf("settings %+v", s)
	}
	// --context names another one; NATS_CONTEXT too, the flag first.
	writeContext(t, getenv, "other", `{"url": "nats://other:4222"}`, false)
	if s, err := Resolve(Flags{Context: "other"}, withToken); err != nil || s.Servers() != "nats://other:4222" {
		t.Fatalf("--context other: %q, %v", s.Servers(), err)
	}
}

func TestResolveReadsAContextFileByPath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ci.json")
	if err := os.WriteFile(path, []byte(`{"url": "nats://ci:4222", "user": "ci", "password": "`+secret+`"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := Resolve(Flags{Context: path}, fakeEnv(t, nil))
	if err != nil || s.Servers() != "nats://ci:4222" || s.Context() != "ci" {
		t.Fatalf("settings %+v, %v", s, err)
	}
}

func TestResolveTakesAUserWithoutPasswordAsAToken(t *testing.T) {
	s, err := Resolve(Flags{}, fakeEnv(t, map[string]string{"NATS_USER": secret}))
	if err != nil || s.Auth() != "a token ($NATS_USER: a user without a password is a token, as in natscli)" || s.token.value != secret {
		t.Fatalf("auth %s, %v", s.Auth(), err)
	}
	s, err = Resolve(Flags{User: "alice"}, fakeEnv(t, map[string]string{"NATS_PASSWORD": secret}))
	if err != nil || s.Auth() != `user "alice" (--user) with a password ($NATS_PASSWORD)` {
		t.Fatalf("auth %s, %v", s.Auth(), err)
	}
}

// Every refusal is ErrSettings, says what to change, and quotes no secret.
func TestResolveRefusesSettingsThatCannotWork(t *testing.T) {
	for name, c := range map[string]struct {
		flags   Flags
		env     map[string]string
		context string
		want    string
	}{
		"unknown context":     {Flags{Context: "prod"}, nil, "", `unknown NATS context "prod" (--context): no `},
		"unknown from env":    {Flags{}, map[string]string{"NATS_CONTEXT": "prod"}, "", `unknown NATS context "prod" ($NATS_CONTEXT)`},
		"path as a name":      {Flags{Context: "../etc/prod"}, nil, "", `invalid context name "../etc/prod"`},
		"not json":            {Flags{Context: "ctx"}, nil, `{"url": "nats://a:4222", "password": ` + secret, "is not a natscli context: invalid JSON at byte"},
		"jetstream domain":    {Flags{Context: "ctx"}, nil, `{"url": "nats://a:4222", "jetstream_domain": "hub", "nsc": "nsc://o/a/u"}`, "sets jetstream_domain, nsc, which this tool does not support"},
		"two kinds":           {Flags{Creds: touch(t, "u.creds"), NKey: touch(t, "u.nk")}, nil, "", "NATS credentials an nkey (--nkey) and creds (--creds): give one kind"},
		"token and user":      {Flags{User: "alice", Password: secret, Token: secret}, nil, "", "a token (--token) and a user (--user)"},
		"user as token twice": {Flags{User: secret, Token: secret}, nil, "", "--user without a password is a token"},
		"password alone":      {Flags{Password: secret}, nil, "", "a NATS password (--password) without a user"},
		"cert without key":    {Flags{TLSCert: touch(t, "c.pem")}, nil, "", "a TLS client certificate and its key go together"},
		"missing creds":       {Flags{Creds: "/nonexistent/billing.creds"}, nil, "", "the NATS creds file (--creds): stat /nonexistent/billing.creds: no such file"},
		"missing in context":  {Flags{Context: "ctx"}, nil, `{"nkey": "/nonexistent/u.nk"}`, `the NATS nkey file (context "ctx"): stat /nonexistent/u.nk`},
		"op password":         {Flags{Context: "ctx"}, nil, `{"user": "a", "password": "op://vault/nats/` + secret + `"}`, "op:// references are not supported here"},
		"env creds":           {Flags{Creds: "env://NATS_CREDS_CONTENT"}, nil, "", "env: references are not supported here; write it to a file"},
		"unset env password":  {Flags{User: "a", Password: "env://NOPE"}, nil, "", "env://NOPE: the variable is not set or empty"},
	} {
		t.Run(name, func(t *testing.T) {
			getenv := fakeEnv(t, c.env)
			if c.context != "" {
				writeContext(t, getenv, "ctx", c.context, false)
			}
			_, err := Resolve(c.flags, getenv)
			if !errors.Is(err, ErrSettings) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want ErrSettings saying %q", err, c.want)
			}
			if strings.Contains(err.Error(), secret) {
				t.Fatalf("the error quotes the secret: %v", err)
			}
		})
	}
}
