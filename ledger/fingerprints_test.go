package ledger_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/replayctl/replayctl/internal/testenv/pgtest"
	"github.com/replayctl/replayctl/ledger"
)

func TestFingerprintAlgorithmsListTheCurrentFirstAndRefuseAClash(t *testing.T) {
	t.Parallel()
	store := pgtest.Ledger(t)
	ctx := t.Context()
	register := func(consumer, alg, opts string) error {
		return store.FingerprintAlgorithmRegister(ctx, consumer, alg, opts)
	}
	for _, r := range [][3]string{
		{"billing", "sha256-canon-v2+aaaaaaaa", `{"exclude":[],"sets":[]}`},
		{"billing", "sha256-canon-v2+bbbbbbbb", `{"exclude":["sentAt"],"sets":[]}`},
		{"mailer", "sha256-canon-v2+cccccccc", `{"exclude":[],"sets":["to"]}`},
	} {
		if err := register(r[0], r[1], r[2]); err != nil {
			t.Fatal(err)
		}
	}
	// A restarted instance with the first options makes them current again.
	if err := register("billing", "sha256-canon-v2+aaaaaaaa", `{"exclude":[],"sets":[]}`); err != nil {
		t.Fatal(err)
	}
	err := register("billing", "sha256-canon-v2+aaaaaaaa", `{"exclude":["trace.*"],"sets":[]}`)
	if !errors.Is(err, ledger.ErrFingerprintOptionsClash) {
		t.Fatalf("the same name with other options: %v, want ErrFingerprintOptionsClash", err)
	}
	got, err := store.FingerprintAlgorithms(ctx, "billing")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Algorithm != "sha256-canon-v2+aaaaaaaa" || got[0].Options != `{"exclude":[],"sets":[]}` ||
		got[1].Algorithm != "sha256-canon-v2+bbbbbbbb" || got[1].Options != `{"exclude":["sentAt"],"sets":[]}` {
		t.Fatalf("billing's algorithms: %+v", got)
	}
	if got, err := store.FingerprintAlgorithms(ctx, "nobody"); err != nil || len(got) != 0 {
		t.Fatalf("a consumer that never registered: %+v, %v", got, err)
	}
}

func TestFingerprintAlgorithmRegisterOnAnOldSchemaSaysToMigrate(t *testing.T) {
	t.Parallel()
	store := pgtest.Ledger(t)
	if _, err := store.Pool().Exec(t.Context(), "drop table fingerprint_algorithms"); err != nil {
		t.Fatal(err)
	}
	err := store.FingerprintAlgorithmRegister(t.Context(), "billing", "sha256-canon-v2+aaaaaaaa", `{"exclude":[],"sets":[]}`)
	if !errors.Is(err, ledger.ErrSchemaOutdated) || !strings.Contains(err.Error(), "replayctl migrate") {
		t.Fatalf("register without the table: %v, want ErrSchemaOutdated saying to run replayctl migrate", err)
	}
}
