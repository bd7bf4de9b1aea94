package demo_test

import (
	"context"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/replayctl/replayctl/internal/demo"
	"github.com/replayctl/replayctl/internal/testenv/pgtest"
)

// Two demo runs on one database and schema take turns instead of dropping the schema under each
// other (which failed the first with `relation "replayctl_migrations" does not exist`).
func TestTwoDemoRunsOnOneSchemaBothPass(t *testing.T) {
	dbURL := pgtest.URL(t)
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	schema := u.Query().Get("search_path")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		waited  int
		reports [2]*demo.Report
		errs    [2]error
	)
	for i := range reports {
		wg.Go(func() {
			reports[i], errs[i] = demo.Run(ctx, demo.Options{
				DatabaseURL: dbURL, Schema: schema, Events: 200, Dir: t.TempDir(), Actor: "ci",
				Step: func(format string, _ ...any) {
					if strings.HasPrefix(format, "waiting for another demo run") {
						mu.Lock()
						waited++
						mu.Unlock()
					}
				},
			})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		if m := reports[i].Mismatches; len(m) > 0 {
			t.Errorf("run %d differs from the seeded truth: %v", i, m)
		}
	}
	if waited != 1 {
		t.Errorf("%d runs said they waited for the other; want exactly 1", waited)
	}
}
