package cmdutil

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func runJQ(t *testing.T, ctx context.Context, expr, doc string) (string, error) {
	t.Helper()
	return runJQWithin(t, ctx, defaultJQBudget, expr, doc)
}

func runJQWithin(t *testing.T, ctx context.Context, budget jqBudget, expr, doc string) (string, error) {
	t.Helper()
	code, err := CompileJQ(expr)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	j := &JQOutput{code: code, out: &out, budget: budget}
	j.buf.WriteString(doc)
	err = j.flush(ctx)
	return out.String(), err
}

func TestJQSelectsFromTheDocument(t *testing.T) {
	t.Parallel()
	got, err := runJQ(t, t.Context(), `.counts.completed, .name`, `{"counts":{"completed":12345678901234},"name":"x"}`)
	if err != nil || got != "12345678901234\nx\n" {
		t.Fatalf("%q %v", got, err)
	}
}

func TestJQThatRecursesForEverIsStoppedByItsTimeBudget(t *testing.T) {
	t.Parallel()
	budget := jqBudget{time: 300 * time.Millisecond, memory: defaultJQBudget.memory}
	_, err := runJQWithin(t, t.Context(), budget, `def f: f; f`, `{}`)
	if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "ran 300ms") {
		t.Fatalf("def f: f; f: %v, want a usage error naming the time budget", err)
	}
}

func TestJQThatGrowsWithoutBoundIsStoppedByItsMemoryBudget(t *testing.T) {
	t.Parallel()
	budget := jqBudget{time: defaultJQBudget.time, memory: 64 << 20}
	_, err := runJQWithin(t, t.Context(), budget, `[limit(1e8; repeat(1))] | length`, `{}`)
	if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "heap past 64 MiB") {
		t.Fatalf("[limit(1e8; repeat(1))]: %v, want a usage error naming the memory budget", err)
	}
}

func TestJQStopsWhenTheCommandIsInterrupted(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancelCause(t.Context())
	time.AfterFunc(100*time.Millisecond, func() { cancel(errors.New("interrupted by interrupt")) })
	_, err := runJQ(t, ctx, `def f: f; f`, `{}`)
	if err == nil || !strings.Contains(err.Error(), "interrupted") || errors.Is(err, ErrUsage) {
		t.Fatalf("interrupted: %v", err)
	}
}
