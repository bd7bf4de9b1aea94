package cli

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/replayctl/replayctl/apikey"
	"github.com/replayctl/replayctl/consumer"
	"github.com/replayctl/replayctl/internal/cmdutil"
	"github.com/replayctl/replayctl/internal/testenv/exectest"
	"github.com/replayctl/replayctl/internal/testenv/pgtest"
	"github.com/replayctl/replayctl/jobtype"
	"github.com/replayctl/replayctl/ledger"
)

// TestLeastPrivilegeRolesRunTheirCommandsAndAreRefusedTheRest gives an SDK, an operator and a
// read-only role exactly what `replayctl ledger grants` prints, then runs a whole replay with the
// consumer SDK under the SDK role and execute under the operator role, reads it under the
// read-only role, and shows what each role is refused.
func TestLeastPrivilegeRolesRunTheirCommandsAndAreRefusedTheRest(t *testing.T) {
	t.Parallel()
	const n = 6
	w := newExecWorld(t)
	m := w.Shadowed(n, "job-roles")

	sdk, sdkURL := pgtest.Role(t, w.DatabaseURL, "sdk")
	op, opURL := pgtest.Role(t, w.DatabaseURL, "op")
	ro, roURL := pgtest.Role(t, w.DatabaseURL, "ro")
	grants, stderr, code := runCommand(t, false, "ledger grants --sdk-role "+sdk+" --operator-role "+op+
		" --readonly-role "+ro+" --database-url '"+w.DatabaseURL+"'")
	if code != cmdutil.ExitOK {
		t.Fatalf("ledger grants: exit %d: %s", code, stderr)
	}
	pgtest.Exec(t, grants)
	as := func(url string) string {
		return " --database-url '" + url + "' --nats-url " + w.NATS.Server.ClientURL() + " --actor alice"
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sdkStore, err := ledger.Open(ctx, sdkURL)
	if err != nil {
		t.Fatal(err)
	}
	defer sdkStore.Close()
	w.RunConsumer(w.NewConsumer(nil, func(c *consumer.Config) { c.Store = sdkStore }))

	stdout, stderr, code := runCommand(t, false, "execute --yes "+w.ManifestPath()+as(opURL))
	if code != cmdutil.ExitOK {
		t.Fatalf("execute as the operator role: exit %d:\n%s\n%s", code, stdout, stderr)
	}
	w.assertChargedOnce(t, n)
	if c := w.EffectCounts(m); c.Completed != n {
		t.Errorf("%d targets completed under the SDK role, want %d", c.Completed, n)
	}

	// The HTTP middleware runs under the SDK role too: its claim reads the compact tombstones
	// (migration 0038), which keys prune writes under the operator role.
	if _, _, err := sdkStore.APIKeysClaim(ctx, apikey.Claim{ScopeHash: "scope", KeyHash: "key", Route: "POST /v1/charges",
		ClientHash: "client", RequestHash: "sha256:00", RequestHashAlg: "sha256-canon-v2", Owner: "o1", Lease: time.Minute}); err != nil {
		t.Errorf("the middleware's claim as the SDK role: %v", err)
	}
	if stdout, stderr, code := runCommand(t, false, "keys prune --all-routes --compact-after 7d --yes"+as(opURL)); code != cmdutil.ExitOK {
		t.Errorf("keys prune --compact-after as the operator role: exit %d:\n%s\n%s", code, stdout, stderr)
	}

	for _, args := range []string{"status " + m.ID, "status --json " + m.ID, "show " + m.ID, "ledger stats --consumer billing"} {
		if stdout, stderr, code := runCommand(t, false, args+as(roURL)); code != cmdutil.ExitOK {
			t.Errorf("%s as the read-only role: exit %d:\n%s\n%s", args, code, stdout, stderr)
		}
	}

	// A new dead letter, so the SDK role's plan has a target to record and is refused for that.
	w.PublishDLQ("evt-roles-new", exectest.Order(1000))
	refused := []struct{ role, url, args string }{
		{"read-only", roURL, "cancel --reason 'not the read-only role to decide' " + m.ID},
		{"read-only", roURL, "pause --reason 'not the read-only role to decide' " + m.ID},
		{"sdk", sdkURL, "cancel --reason 'not the consumer SDK to decide' " + m.ID},
		{"sdk", sdkURL, "plan --consumer billing --stream DLQ_BILLING --reason 'provider outage fixed; replay again' -o " + t.TempDir() + "/j.json"},
	}
	for _, r := range refused {
		stdout, stderr, code := runCommand(t, false, r.args+as(r.url))
		if code != cmdutil.ExitUsage || !strings.Contains(stderr, "permission denied") ||
			!strings.Contains(stderr, "replayctl ledger grants") {
			t.Errorf("%s as the %s role: exit %d, want %d naming the refused privilege and the grants:\n%s\n%s",
				r.args, r.role, code, cmdutil.ExitUsage, stdout, stderr)
		}
	}
	if s := w.JobStatus(m.ID); s != jobtype.Completed {
		t.Errorf("job %s after the refused commands, want completed", s)
	}

	// What the SDK role cannot do even with a hand-written statement.
	conn, err := pgx.Connect(ctx, sdkURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, sql := range []string{
		"update jobs set status = 'cancelled'",
		"delete from effects",
		"delete from audit",
		"insert into job_targets select * from job_targets limit 0",
		"drop table effects",
	} {
		_, err := conn.Exec(ctx, sql)
		pgErr, ok := errors.AsType[*pgconn.PgError](err)
		if !ok || (pgErr.Code != "42501" && pgErr.Code != "42P01") {
			t.Errorf("%q as the SDK role: %v, want permission denied", sql, err)
		}
	}
}
