package cli

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/replayctl/replayctl/idempotency"
	"github.com/replayctl/replayctl/internal/billing"
	"github.com/replayctl/replayctl/internal/cmdutil"
	"github.com/replayctl/replayctl/internal/testenv/pgtest"
	"github.com/replayctl/replayctl/keys"
	"github.com/replayctl/replayctl/ledger/ledgertest"
)

// keysWorld is a ledger with the billing API's records: key "k-done" completed, "k-doubt"
// uncertain (its connection reset after the charge), both of alice.
type keysWorld struct {
	dbURL, secretFile string
	provider          *billing.Provider
}

func newKeysWorld(t *testing.T) *keysWorld {
	t.Helper()
	store, dbURL := pgtest.LedgerWithURL(t)
	w := &keysWorld{dbURL: dbURL, provider: billing.NewProvider()}
	w.secretFile = filepath.Join(t.TempDir(), "key-secret")
	if err := os.WriteFile(w.secretFile, []byte(base64.StdEncoding.EncodeToString(billing.DemoKeySecret())+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tokens := billing.DemoTokens()
	k, err := idempotency.New(t.Context(), idempotency.Config{Store: store, KeySecret: billing.DemoKeySecret(),
		Keyring: billing.DemoKeyring(), Routes: []idempotency.Route{billing.ChargesRoute(w.provider)}, Scope: tokens.Scope,
		Authorize: tokens.Authorize, Service: "billing-api"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(k.Handler("POST", "/v1/charges", billing.APIHandler(w.provider, time.Now)))
	defer srv.Close()
	post := func(key string, o billing.Order) {
		body, _ := json.Marshal(o)
		req, _ := http.NewRequest("POST", srv.URL, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer demo-alice")
		req.Header.Set(idempotency.KeyHeader, key)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	post("k-done", billing.Order{OrderID: "o1", Customer: "c", AmountCents: 100, Currency: "EUR"})
	post("k-done", billing.Order{OrderID: "o1", Customer: "c", AmountCents: 100, Currency: "EUR"})
	w.provider.FailAfter = func(string, string) error { return errors.New("connection reset") }
	post("k-doubt", billing.Order{OrderID: "o2", Customer: "c", AmountCents: 200, Currency: "EUR"})
	w.provider.FailAfter = nil
	if err := k.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	return w
}

func (w *keysWorld) replayctl(t *testing.T, args string) (string, string, int) {
	t.Helper()
	return runCommand(t, false, "--database-url '"+w.dbURL+"' "+args)
}

func TestKeysVerbsShowPolicyStatsAndAKeyWithoutItsBody(t *testing.T) {
	t.Parallel()
	w := newKeysWorld(t)

	out, errOut, code := w.replayctl(t, "keys policy --json")
	validateJSON(t, "keys-policy.schema.json", out)
	var policy struct{ Policies []keys.PolicyView }
	if code != 0 || json.Unmarshal([]byte(out), &policy) != nil || len(policy.Policies) != 1 ||
		policy.Policies[0].Name != "POST /v1/charges" || policy.Policies[0].OfflineResendSeconds != 72*3600 ||
		policy.Policies[0].ReplayWindowSeconds != 90*3600 || policy.Policies[0].EvidenceWindowSeconds != 90*3600+120*86400 {
		t.Fatalf("policy: %d %s %s", code, out, errOut)
	}

	out, errOut, code = w.replayctl(t, "keys stats --json")
	validateJSON(t, "keys-stats.schema.json", out)
	var stats keys.StatsReport
	if code != 0 || json.Unmarshal([]byte(out), &stats) != nil || len(stats.Routes) != 1 {
		t.Fatalf("stats: %d %s %s", code, out, errOut)
	}
	if s := stats.Routes[0]; s.Requests != 3 || s.Replays != 1 || s.Uncertain != 1 || s.Records != 2 {
		t.Fatalf("stats figures: %+v", s)
	}
	if len(stats.Warnings) == 0 || stats.Warnings[0].Metric != "replayRate" {
		t.Fatalf("1 replay in 3 requests is above 0.5%%: warnings %+v", stats.Warnings)
	}

	out, errOut, code = w.replayctl(t, "keys show --route 'POST /v1/charges' --key k-done --key-secret-file "+w.secretFile)
	if code != 0 || !strings.Contains(out, "state          completed") || !strings.Contains(out, "201, sealed under key demo-1") ||
		strings.Contains(out, "k-done") || strings.Contains(out, "amountCents") {
		t.Fatalf("show: %d\n%s%s", code, out, errOut)
	}
	_, errOut, code = w.replayctl(t, "keys show --key k-done")
	if code != cmdutil.ExitUsage || !strings.Contains(errOut, "--key-secret-file") {
		t.Fatalf("show without the secret: %d %s", code, errOut)
	}
	_, errOut, code = w.replayctl(t, "keys show --key-hash hmac-sha256:"+strings.Repeat("0", 64))
	if code != cmdutil.ExitUsage || !strings.Contains(errOut, "no such API record") {
		t.Fatalf("show of an unknown key: %d %s", code, errOut)
	}
	// A hash no record can have is the operator's typo, said as such: not "no such record".
	_, errOut, code = w.replayctl(t, "keys show --key-hash hmac-sha256:0000")
	if code != cmdutil.ExitUsage || !strings.Contains(errOut, "64 lowercase hex digits") {
		t.Fatalf("show of a malformed hash: %d %s", code, errOut)
	}
}

func TestKeysResolveSettlesAnUncertainRecordWithAnAuditEntry(t *testing.T) {
	t.Parallel()
	w := newKeysWorld(t)
	out, _, code := w.replayctl(t, "keys uncertain --json")
	validateJSON(t, "keys-records.schema.json", out)
	var list struct{ Records []keys.RecordView }
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil || len(list.Records) != 1 || list.Records[0].CallsStarted != 1 {
		t.Fatalf("uncertain: %d %s", code, out)
	}
	hash := list.Records[0].KeyHash
	_, errOut, code := w.replayctl(t, "keys resolve --key-hash "+hash+" --as happened --note 'provider dashboard shows ch_1'")
	if code != cmdutil.ExitGateRefused || !strings.Contains(errOut, "--yes") {
		t.Fatalf("resolve without a terminal or --yes: %d %s", code, errOut)
	}
	_, errOut, code = w.replayctl(t, "keys resolve --key-hash "+hash+" --as maybe --note 'provider dashboard shows ch_1' --yes")
	if code != cmdutil.ExitUsage {
		t.Fatalf("--as maybe: %d %s", code, errOut)
	}
	out, errOut, code = w.replayctl(t, "keys resolve --key-hash "+hash+" --as happened --ref ch_1 --note 'provider dashboard shows ch_1' --yes")
	if code != 0 || !strings.Contains(out, "is told it happened") {
		t.Fatalf("resolve: %d %s %s", code, out, errOut)
	}
	out, _, _ = w.replayctl(t, "keys show --key-hash "+hash+" --json")
	validateJSON(t, "keys-records.schema.json", out)
	var shown struct{ Records []keys.RecordView }
	_ = json.Unmarshal([]byte(out), &shown)
	if len(shown.Records) != 1 || shown.Records[0].State != "reconciled" || shown.Records[0].ExternalRef != "ch_1" {
		t.Fatalf("after resolve: %s", out)
	}
	var audited int
	if err := pgtest.PoolAt(t, w.dbURL).QueryRow(t.Context(), `select count(*) from audit where action = 'keys.resolved' and details->>'keyHash' = $1`, hash).Scan(&audited); err != nil || audited != 1 {
		t.Fatalf("audit entries of the resolve: %d %v", audited, err)
	}
	_, errOut, code = w.replayctl(t, "keys resolve --key-hash "+hash+" --as happened --note 'provider dashboard shows ch_1' --yes")
	if code != cmdutil.ExitFailure || !strings.Contains(errOut, "not uncertain") {
		t.Fatalf("a second resolve: %d %s", code, errOut)
	}
}

func TestKeysPruneDropsBodiesPastTheReplayWindowAndKeepsUncertain(t *testing.T) {
	t.Parallel()
	w := newKeysWorld(t)
	pool := pgtest.PoolAt(t, w.dbURL)
	ledgertest.EndKeyWindows(t, pool, time.Hour, 0)
	out, _, code := w.replayctl(t, "keys prune --all-routes --dry-run --json")
	var dry struct{ Bodies, Tombstoned int64 }
	if code != 0 || json.Unmarshal([]byte(out), &dry) != nil || dry.Bodies != 1 || dry.Tombstoned != 0 {
		t.Fatalf("dry run: %d %s", code, out)
	}
	if _, errOut, code := w.replayctl(t, "keys prune"); code != cmdutil.ExitUsage || !strings.Contains(errOut, "--all-routes") {
		t.Fatalf("no route: %d %s", code, errOut)
	}
	if _, _, code := w.replayctl(t, "keys prune --all-routes"); code != cmdutil.ExitGateRefused {
		t.Fatalf("without --yes: %d", code)
	}
	ledgertest.EndKeyWindows(t, pool, 0, time.Second)
	out, errOut, code := w.replayctl(t, "keys prune --all-routes --yes")
	if code != 0 || !strings.Contains(out, "1 sealed responses, 1 records to tombstones") {
		t.Fatalf("prune: %d %s %s", code, out, errOut)
	}
	var states []string
	rows, _ := pool.Query(t.Context(), `select state || ':' || (response_sealed is null)::text from api_keys order by state`)
	for rows.Next() {
		var s string
		_ = rows.Scan(&s)
		states = append(states, s)
	}
	rows.Close()
	if strings.Join(states, ",") != "expired:true,uncertain:true" {
		t.Fatalf("after prune: %v (the uncertain record must stay uncertain)", states)
	}

	// The tombstone leaves at the retention the route registered (a year), not the default five.
	ledgertest.EndKeyWindows(t, pool, 0, 400*24*time.Hour, "expired")
	var due struct {
		Rows   int64
		Routes []struct {
			Route            string
			TombstonesBefore time.Time
		}
		TombstonesBefore time.Time
	}
	out, _, code = w.replayctl(t, "keys prune --all-routes --dry-run --json")
	validateJSON(t, "keys-prune.schema.json", out)
	if code != 0 || json.Unmarshal([]byte(out), &due) != nil || due.Rows != 1 || len(due.Routes) != 1 ||
		due.Routes[0].Route != "POST /v1/charges" || time.Since(due.Routes[0].TombstonesBefore) < 364*24*time.Hour {
		t.Fatalf("dry run past the route's registered year: %d %s", code, out)
	}
	if out, _, code = w.replayctl(t, "keys prune --all-routes --dry-run --json --tombstone-retention 1825d"); code != 0 ||
		json.Unmarshal([]byte(out), &due) != nil || due.Rows != 0 {
		t.Fatalf("dry run with --tombstone-retention 1825d for every route: %d %s", code, out)
	}
	if out, errOut, code = w.replayctl(t, "keys prune --all-routes --yes"); code != 0 || !strings.Contains(out, "1 tombstones") ||
		!strings.Contains(out, "tombstones of POST /v1/charges: before") {
		t.Fatalf("prune past the route's retention: %d %s %s", code, out, errOut)
	}
}

// A verb's required flag is a usage error (exit 2) from the root, before anything is opened.
func TestKeysResolveWithoutAsIsAUsageError(t *testing.T) {
	t.Parallel()
	if _, errOut, code := runCommand(t, false, "keys resolve --key-hash h --note x --database-url postgres://127.0.0.1:1/x"); code != cmdutil.ExitUsage || !strings.Contains(errOut, `"as" not set`) {
		t.Fatalf("resolve without --as: exit %d %s", code, errOut)
	}
}
