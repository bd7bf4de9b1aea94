package cmdutil

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime/metrics"
	"strings"
	"time"

	"github.com/itchyny/gojq"

	"github.com/replayctl/replayctl/internal/every"
)

// The budget of one --jq run: a filter that recurses for ever (def f: f; f) or builds without
// bound ([limit(1e8; repeat(1))]) is stopped with an error saying so, instead of spinning a core
// or taking the machine's memory. A filter over a command's output needs milliseconds and
// kilobytes; these leave room for a million-row listing.
// The budget is a field of each JQOutput, not a package variable, so that two runs (two tests
// in parallel) cannot change each other's.
type jqBudget struct {
	time   time.Duration
	memory uint64
}

var defaultJQBudget = jqBudget{time: 30 * time.Second, memory: 1 << 30}

// errJQOverBudget is the cause of a --jq run stopped by its budget.
var errJQOverBudget = errors.New("over budget")

// JQOutput applies --jq to what a command writes on stdout under --json: it holds the output
// until the command ends, then runs the filter over each JSON document in it, as gh's --jq does.
// A string result is printed bare, anything else as compact JSON, one result a line.
type JQOutput struct {
	code   *gojq.Code
	out    io.Writer
	buf    bytes.Buffer
	budget jqBudget
}

// CompileJQ parses --jq; a bad expression is a usage error that says where it went wrong,
// before anything is opened.
func CompileJQ(expr string) (*gojq.Code, error) {
	q, err := gojq.Parse(expr)
	if err != nil {
		msg := err.Error()
		if pe, ok := errors.AsType[*gojq.ParseError](err); ok {
			msg = fmt.Sprintf("%s at offset %d\n  %s\n  %s^", pe.Error(), pe.Offset, expr, strings.Repeat(" ", max(0, pe.Offset-len(pe.Token))))
		}
		return nil, UsageErrorf("--jq %q: %s", expr, msg)
	}
	code, err := gojq.Compile(q)
	if err != nil {
		return nil, UsageErrorf("--jq %q: %v", expr, err)
	}
	return code, nil
}

// Write collects the document --jq filters when the command is done.
func (j *JQOutput) Write(p []byte) (int, error) { return j.buf.Write(p) }

// flush runs the filter over the held documents and writes the results, under ctx (the
// command's: Ctrl-C stops it) and the time and memory budget.
func (j *JQOutput) flush(ctx context.Context) error {
	ctx, cancel := context.WithTimeoutCause(ctx, j.budget.time, fmt.Errorf("%w: ran %s", errJQOverBudget, j.budget.time))
	defer cancel()
	ctx, stopWatch := watchHeap(ctx, j.budget.memory)
	defer stopWatch()
	err := j.run(ctx)
	if err != nil && ctx.Err() != nil {
		cause := context.Cause(ctx)
		if errors.Is(cause, errJQOverBudget) {
			return UsageErrorf("--jq stopped: %v (does the filter recurse or build without end?)", cause)
		}
		return fmt.Errorf("--jq stopped: %w", cause)
	}
	return err
}

// watchHeap cancels ctx when the heap grows by more than budget bytes while it runs.
func watchHeap(parent context.Context, budget uint64) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	heap := func() uint64 {
		metrics.Read(sample)
		if sample[0].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return sample[0].Value.Uint64()
	}
	// The growth is counted from the lowest heap seen, not the first: garbage of earlier work
	// counted at the start and collected later would otherwise hide as much growth.
	base := heap()
	stop := every.Interval(ctx, 20*time.Millisecond, func() bool {
		now := heap()
		base = min(base, now)
		if now > base+budget {
			cancel(fmt.Errorf("%w: grew the heap past %d MiB", errJQOverBudget, budget>>20))
			return false
		}
		return true
	})
	return ctx, func() { stop(); cancel(nil) }
}

func (j *JQOutput) run(ctx context.Context) error {
	dec := json.NewDecoder(&j.buf)
	dec.UseNumber()
	for {
		var doc any
		if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return fmt.Errorf("--jq: the command's output is not JSON: %w", err)
		}
		iter := j.code.RunWithContext(ctx, normaliseNumbers(doc))
		for {
			v, ok := iter.Next()
			if !ok {
				break
			}
			if err, ok := v.(error); ok {
				if halt, ok := errors.AsType[*gojq.HaltError](err); ok && halt.Value() == nil {
					break
				}
				return fmt.Errorf("--jq: %w", err)
			}
			if s, ok := v.(string); ok {
				fmt.Fprintln(j.out, s)
				continue
			}
			b, err := gojq.Marshal(v)
			if err != nil {
				return fmt.Errorf("--jq: %w", err)
			}
			fmt.Fprintln(j.out, string(b))
		}
	}
}

// normaliseNumbers turns json.Number into the int or float64 gojq computes with, keeping large
// integers (sequences, byte counts) exact.
func normaliseNumbers(v any) any {
	switch t := v.(type) {
	case json.Number:
		if i, err := t.Int64(); err == nil {
			return int(i)
		}
		f, _ := t.Float64()
		return f
	case map[string]any:
		for k, e := range t {
			t[k] = normaliseNumbers(e)
		}
	case []any:
		for i, e := range t {
			t[i] = normaliseNumbers(e)
		}
	}
	return v
}
