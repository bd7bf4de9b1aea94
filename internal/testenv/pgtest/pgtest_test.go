package pgtest

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func TestURLGivesEachTestItsOwnSchema(t *testing.T) {
	var schema string
	t.Run("Sub/A b", func(t *testing.T) {
		conn, err := pgx.Connect(t.Context(), URL(t))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.Background())
		if err := conn.QueryRow(t.Context(), "select current_schema()").Scan(&schema); err != nil {
			t.Fatal(err)
		}
		if !regexp.MustCompile(`^t_testurlgiveseachtestitsownschema_sub_a_b_[0-9a-f]{8}$`).MatchString(schema) {
			t.Errorf("current_schema() = %q", schema)
		}
		if _, err := conn.Exec(t.Context(), "create table probe (id int)"); err != nil {
			t.Fatal(err)
		}
	})
	if schema == "" {
		t.Fatal("the subtest did not report its schema")
	}
	var exists bool
	if err := pool.QueryRow(t.Context(), "select exists (select from pg_namespace where nspname = $1)", schema).Scan(&exists); err != nil {
		t.Fatal(err)
	}
	if exists {
		t.Errorf("schema %s still exists after its test ended", schema)
	}
}

func TestURLOverridesAnExistingSearchPath(t *testing.T) {
	for _, base := range []string{
		"postgres:///test?host=/var/run/postgresql&search_path=public",
		"host=/var/run/postgresql dbname=test search_path=public",
	} {
		got := withSearchPath(base, "t_x_0000abcd")
		cfg, err := pgx.ParseConfig(got)
		if err != nil {
			t.Fatalf("%s: %v", got, err)
		}
		if sp := cfg.RuntimeParams["search_path"]; sp != "t_x_0000abcd" {
			t.Errorf("%s: search_path %q, want t_x_0000abcd", got, sp)
		}
		if cfg.Database != "test" || cfg.Host != "/var/run/postgresql" {
			t.Errorf("%s: database %q host %q", got, cfg.Database, cfg.Host)
		}
	}
}

func TestWithSearchPath(t *testing.T) {
	tests := []struct{ base, want string }{
		{"postgres://u@h/db", "postgres://u@h/db?search_path=s"},
		{"postgres:///test?host=/var/run/postgresql", "postgres:///test?host=/var/run/postgresql&search_path=s"},
		{"host=/tmp dbname=test ", "host=/tmp dbname=test search_path=s"},
	}
	for _, tt := range tests {
		if got := withSearchPath(tt.base, "s"); got != tt.want {
			t.Errorf("withSearchPath(%q) = %q, want %q", tt.base, got, tt.want)
		}
	}
}

func TestSchemaNameFitsAnIdentifier(t *testing.T) {
	// 52 bytes of the sanitised name fit; the cut lands after an underscore, which is dropped.
	name := schemaName(strings.Repeat("TestVeryLong/", 20))
	if !regexp.MustCompile(`^t_testverylong_testverylong_testverylong_testverylong_[0-9a-f]{8}$`).MatchString(name) {
		t.Errorf("schemaName = %q (%d bytes)", name, len(name))
	}
	if a, b := schemaName("TestX"), schemaName("TestX"); a == b {
		t.Errorf("two schemas for one test share the name %s", a)
	}
}

func TestWaitFor(t *testing.T) {
	calls := 0
	WaitFor(t, time.Second, func() (bool, error) { calls++; return calls == 3, nil })
	if calls != 3 {
		t.Errorf("cond called %d times, want 3", calls)
	}
}

// fatalRecorder stands in for a test whose failure is the expected outcome.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (r *fatalRecorder) Helper() {}

// Fatalf records the message and ends the goroutine as testing.T.Fatalf does.
func (r *fatalRecorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
	panic(r)
}

func runFatal(fn func(tb testing.TB)) (msg string) {
	r := &fatalRecorder{}
	defer func() {
		if recover() != nil {
			msg = r.msg
		}
	}()
	fn(r)
	return ""
}

func TestWaitForFails(t *testing.T) {
	if msg := runFatal(func(tb testing.TB) {
		WaitFor(tb, 20*time.Millisecond, func() (bool, error) { return false, nil })
	}); !strings.Contains(msg, "condition still false") {
		t.Errorf("timeout: Fatalf %q", msg)
	}
	if msg := runFatal(func(tb testing.TB) {
		WaitFor(tb, time.Second, func() (bool, error) { return false, errors.New("boom") })
	}); !strings.Contains(msg, "boom") {
		t.Errorf("error: Fatalf %q", msg)
	}
}

// The vacuum a binary runs when the catalogs are bloated must be a statement the server takes:
// a misspelt catalog would fail only on a bloated machine, silently.
func TestCatalogVacuumIsAStatementTheServerTakes(t *testing.T) {
	shared(t)
	if _, err := pool.Exec(t.Context(), catalogVacuum); err != nil {
		t.Fatalf("%s: %v", catalogVacuum, err)
	}
}
