package executor_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/replayctl/replayctl/executor"
	"github.com/replayctl/replayctl/internal/testenv/exectest"
	"github.com/replayctl/replayctl/manifest"
)

// options are a run's defaults in the tests: fast polls, the default guards, confirmed.
func options(m *manifest.Manifest, mod func(*executor.Options)) executor.Options {
	o := executor.Options{Manifest: m, Guards: executor.DefaultGuards(), PollInterval: 50 * time.Millisecond,
		SettleTimeout: 20 * time.Second, Actor: "carol"}
	if mod != nil {
		mod(&o)
	}
	return o
}

func execute(e *exectest.Env, o executor.Options) (*executor.Result, error) {
	return executor.Execute(e.Ctx, e.NATS.JS, e.Store, o)
}

func mustExecute(t *testing.T, e *exectest.Env, o executor.Options) *executor.Result {
	t.Helper()
	r, err := execute(e, o)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// gateOf returns the gate that refused err, failing the test when no gate did.
func gateOf(t *testing.T, err error) string {
	t.Helper()
	g, ok := errors.AsType[*executor.GateError](err)
	if !ok {
		t.Fatalf("want a gate refusal, got %v", err)
	}
	return g.Gate
}

func auditActions(t *testing.T, e *exectest.Env, jobID string) []string {
	t.Helper()
	entries, err := e.Store.AuditList(e.Ctx, jobID)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(entries))
	for i, a := range entries {
		out[i] = a.Action
	}
	return out
}

// waitFor polls cond until it holds or the test's patience ends.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
