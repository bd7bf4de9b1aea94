package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/replayctl/replayctl/consumer"
	"github.com/replayctl/replayctl/internal/billing"
	"github.com/replayctl/replayctl/internal/cmdutil"
	"github.com/replayctl/replayctl/internal/testenv/exectest"
	"github.com/replayctl/replayctl/internal/testenv/natstest"
	"github.com/replayctl/replayctl/internal/testenv/pgtest"
	"github.com/replayctl/replayctl/internal/testenv/slowtest"
)

// TestNATSPermissionsOfTheDocsRunAReplayAndRefuseTheRest loads docs/nats/permissions.conf as an
// operator would, runs plan, shadow and execute as its replayctl user with the billing consumer
// under its own user, and shows that CI's user can dry-run but not publish a replay, and that the
// consumer's user cannot publish one either.
func TestNATSPermissionsOfTheDocsRunAReplayAndRefuseTheRest(t *testing.T) {
	slowtest.Require(t)
	const n = 5
	passwords := map[string]string{"replayctl": "rp-" + secret, "billing": "bc-" + secret, "ci": "ci-" + secret}
	t.Setenv("REPLAYCTL_NATS_PASSWORD", passwords["replayctl"])
	t.Setenv("BILLING_NATS_PASSWORD", passwords["billing"])
	t.Setenv("CI_NATS_PASSWORD", passwords["ci"])
	opts, err := server.ProcessConfigFile("../../docs/nats/permissions.conf")
	if err != nil {
		t.Fatalf("docs/nats/permissions.conf: %v", err)
	}
	// The test's own administrator creates the streams and seeds the DLQ, as a platform team would.
	opts.Users = append(opts.Users, &server.User{Username: "admin", Password: "ad-" + secret})
	url := natstest.StartSecured(t, opts)
	connect := func(user, password string) *nats.Conn {
		nc, err := nats.Connect(url, nats.UserInfo(user, password))
		if err != nil {
			t.Fatalf("connect as %s: %v", user, err)
		}
		t.Cleanup(nc.Close)
		return nc
	}
	admin := connect("admin", "ad-"+secret)
	adminJS, _ := jetstream.New(admin)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	exectest.CreateStreams(ctx, t, adminJS, 1)
	store, dbURL := pgtest.LedgerWithURL(t)
	e := &exectest.Env{T: t, Ctx: ctx, NATS: &natstest.Env{Conn: admin, JS: adminJS}, Store: store, DatabaseURL: dbURL,
		Dir: t.TempDir(), Provider: billing.NewProvider(), Seqs: map[string]uint64{}}
	e.Seed(n)

	fleet := e.NewConsumer(nil, func(c *consumer.Config) { c.Conn = connect("billing", passwords["billing"]) })
	stopShadow, err := fleet.ServeShadow(ctx)
	if err != nil {
		t.Fatalf("shadow responder as user billing: %v", err)
	}
	defer stopShadow()
	e.RunConsumer(fleet)

	as := func(user string) string {
		return " --database-url '" + dbURL + "' --nats-url " + url + " --user " + user + " --password " + passwords[user] + " --actor alice"
	}
	manifestPath := e.ManifestPath()
	for _, step := range []string{
		"plan --consumer billing --stream " + exectest.DLQStream + " --reason 'provider outage fixed; replay failed charges' -o " + manifestPath,
		"shadow " + manifestPath,
	} {
		if stdout, stderr, code := runCommand(t, false, step+as("replayctl")); code != cmdutil.ExitOK {
			t.Fatalf("%s as user replayctl: exit %d:\n%s\n%s", step, code, stdout, stderr)
		}
	}

	if stdout, stderr, code := runCommand(t, false, "execute --dry-run "+manifestPath+as("ci")); code != cmdutil.ExitOK {
		t.Errorf("execute --dry-run as user ci: exit %d:\n%s\n%s", code, stdout, stderr)
	}
	began := time.Now()
	stdout, stderr, code := runCommand(t, false, "execute --yes "+manifestPath+as("ci"))
	if took := time.Since(began); took > time.Minute {
		t.Errorf("the refused execute took %s to stop", took)
	}
	if code != cmdutil.ExitUsage || !strings.Contains(stderr, `the NATS server refused the publish of replays to billing.charge.requested`) ||
		!strings.Contains(stderr, "docs/nats/permissions.conf") {
		t.Errorf("execute as user ci: exit %d, want %d naming the refused permission:\n%s\n%s", code, cmdutil.ExitUsage, stdout, stderr)
	}
	if calls := e.Provider.Calls(""); calls != 0 {
		t.Fatalf("CI's refused execute made %d provider calls", calls)
	}

	// The consumer's user cannot publish a replay of its own.
	bjs, _ := jetstream.New(connect("billing", passwords["billing"]))
	pctx, pcancel := context.WithTimeout(ctx, 3*time.Second)
	defer pcancel()
	if _, err := bjs.Publish(pctx, exectest.OriginalSubject, []byte(`{}`)); err == nil {
		t.Error("user billing published to the consumer's own stream subjects")
	}

	if stdout, stderr, code := runCommand(t, false, "execute --yes "+manifestPath+as("replayctl")); code != cmdutil.ExitOK {
		t.Fatalf("execute as user replayctl: exit %d:\n%s\n%s", code, stdout, stderr)
	}
	if dups := e.DuplicateCharges(); len(dups) > 0 {
		t.Errorf("duplicate charges: %v", dups)
	}
	if got := len(e.Provider.ChargedOrders()); got != n {
		t.Errorf("%d orders charged under the documented permissions, want %d", got, n)
	}
}
