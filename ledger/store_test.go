package ledger_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/replayctl/replayctl/internal/testenv/pgtest"
	"github.com/replayctl/replayctl/ledger"
)

func TestOpenSetsSessionDefaults(t *testing.T) {
	t.Parallel()
	base := pgtest.URL(t)
	tests := []struct {
		name, suffix, appName, timeout, jit string
	}{
		{"defaults", "", "replayctl", "1min", "off"},
		{"URL overrides", "&application_name=ops-shell&statement_timeout=5s&jit=on", "ops-shell", "5s", "on"},
		{"options overrides", "&options=-c%20statement_timeout%3D7s%20-c%20jit%3Don", "replayctl", "7s", "on"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := openStore(t, base+tt.suffix)
			var appName, timeout, jit string
			if err := store.Pool().QueryRow(t.Context(), "select current_setting('application_name'), current_setting('statement_timeout'), current_setting('jit')").Scan(&appName, &timeout, &jit); err != nil {
				t.Fatal(err)
			}
			if appName != tt.appName || timeout != tt.timeout || jit != tt.jit {
				t.Errorf("application_name %q statement_timeout %q jit %q, want %q %q %q", appName, timeout, jit, tt.appName, tt.timeout, tt.jit)
			}
		})
	}
}

// The commands turn JIT off (a key read compiled for longer than it ran at a large ledger); an
// SDK store leaves the server's setting alone, one startup parameter fewer for a PgBouncer.
func TestOnlyTheCommandsConnectionsTurnJITOff(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	sdk, err := ledger.Open(t.Context(), url, ledger.ForHandlers(8))
	if err != nil {
		t.Fatal(err)
	}
	defer sdk.Close()
	for _, c := range []struct {
		name   string
		store  *ledger.Store
		client bool
	}{{"command", openStore(t, url), true}, {"SDK", sdk, false}} {
		var source, value string
		if err := c.store.Pool().QueryRow(t.Context(), "select source, setting from pg_settings where name = 'jit'").Scan(&source, &value); err != nil {
			t.Fatal(err)
		}
		if (source == "client") != c.client || (c.client && value != "off") {
			t.Errorf("%s store: jit %s set by %s; want it off by the client: %t", c.name, value, source, c.client)
		}
	}
}

func TestOpenErrorsHideThePassword(t *testing.T) {
	t.Parallel()
	const secret = "s3cret-pw"
	tests := []struct {
		name, url   string
		unavailable bool
	}{
		{"unreachable", "postgres://ops:" + secret + "@127.0.0.1:1/ledger?connect_timeout=2", true},
		{"unknown database", "postgres://root:" + secret + "@127.0.0.1:5432/replayctl_no_such_db", true},
		{"query password", "postgres://ops@127.0.0.1:1/ledger?connect_timeout=2&password=" + secret, true},
		{"DSN", "host=127.0.0.1 port=1 user=ops password=" + secret + " connect_timeout=2", true},
		{"slash in password", "postgres://ops:" + secret + "/x@127.0.0.1/ledger", false},
		{"bad port", "postgres://ops:" + secret + "@127.0.0.1:port/ledger", false},
		{"bad DSN", "host=127.0.0.1 password='" + secret + " port=1", false},
		{"bad DSN, spaced password", "host=127.0.0.1 port=x password = " + secret, false},
		{"bad DSN, quoted password", "host=127.0.0.1 port=x password='" + secret + "\\'x'", false},
		{"bad URL, escaped password", "postgres://ops:s3cret%2Dpw@127.0.0.1:x/ledger", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store, err := ledger.Open(t.Context(), tt.url)
			if err == nil {
				store.Close()
				t.Fatal("Open succeeded")
			}
			msg := err.Error()
			if strings.Contains(msg, secret) {
				t.Errorf("the error leaks the password: %s", msg)
			}
			if !strings.Contains(msg, "check --database-url / REPLAYCTL_DATABASE_URL") {
				t.Errorf("the error does not say what to check: %s", msg)
			}
			if errors.Is(err, ledger.ErrUnavailable) != tt.unavailable {
				t.Errorf("errors.Is(ErrUnavailable) = %v, want %v: %s", !tt.unavailable, tt.unavailable, msg)
			}
		})
	}
}

func TestRedactURL(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"postgres://ops:s3cret@db.internal:5432/ledger?sslmode=require", "postgres://ops:xxxxx@db.internal:5432/ledger?sslmode=require"},
		{"postgresql://ops:s3cret@db1,db2:5433/ledger", "postgresql://ops:xxxxx@db1,db2:5433/ledger"},
		{"postgres://ops:p%40ss@db/ledger", "postgres://ops:xxxxx@db/ledger"},
		{"postgres://ops:p@ss:w@db/ledger", "postgres://ops:xxxxx@db/ledger"},
		{"postgres://ops:pa?ss@db/ledger", "postgres://ops:xxxxx@db/ledger"},
		{"postgres://ops:pa/ss@db/ledger", "postgres://ops:xxxxx@db/ledger"},
		{"postgres://ops@db/ledger?password=s3cret&sslpassword=k3y&sslmode=require", "postgres://ops@db/ledger?password=xxxxx&sslpassword=xxxxx&sslmode=require"},
		{"postgres://db:5432/ledger?application_name=a@b&password=s3cret", "postgres://db:xxxxx@b&password=xxxxx"},
		{"host=db user=ops password=s3cret dbname=ledger", "host=db user=ops password=xxxxx dbname=ledger"},
		{"host=db password = 's3 cr\\'et' sslpassword=k3y", "host=db password = xxxxx sslpassword=xxxxx"},
		{"host=db password='unterminated s3cret", "host=db password=xxxxx"},
		{"postgres://ops@db:5432/ledger?sslmode=require", "postgres://ops@db:5432/ledger?sslmode=require"},
		{"postgres:///test?host=/var/run/postgresql", "postgres:///test?host=/var/run/postgresql"},
		{"postgres://db/ledger?application_name=a@b", "postgres://db/ledger?application_name=a@b"},
		{"host=/var/run/postgresql dbname=test", "host=/var/run/postgresql dbname=test"},
	}
	for _, tt := range tests {
		if got := ledger.RedactURL(tt.in); got != tt.want {
			t.Errorf("RedactURL(%q)\n got %q\nwant %q", tt.in, got, tt.want)
		}
	}
}
