package planner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	"github.com/nats-io/nats.go"
)

// whereCostLimit bounds what --where may spend on one message, in CEL's cost units (about one
// per operation, per element a comprehension visits, per ten characters a string function
// reads). The cost is bounded by CEL's estimate, not counted as it runs: cel-go's run-time cost
// tracker makes a comprehension quadratic in its list's length (16,000 elements: 4 ms untracked,
// 0.4-0.6 s tracked, docs/decisions.md), while the estimate for a message's actual sizes is an
// upper bound computed once per size class. The limit lets one pass over a list of a million
// elements through and stops nested passes over a list of thousands.
const whereCostLimit = 20_000_000

// whereCompileSizeHint is the payload an expression must fit the limit on to be accepted at all:
// lists, maps and strings of 4,096 elements. Nested comprehensions over such a list are over it
// (16 M iterations); one pass over it, string functions included, is far below.
const whereCompileSizeHint = 4096

// whereInterruptEvery is how many comprehension iterations pass between checks of the command's
// context: Ctrl-C stops a costly expression within milliseconds.
const whereInterruptEvery = 100

// errWhereTooCostly is the cause of a message --where gave up on.
var errWhereTooCostly = errors.New("over the cost limit of --where")

// whereFilter is plan's --where: a CEL expression over a message's JSON body (`payload`) and its
// headers (`headers`, name to first value) that must be true for the message to be selected.
type whereFilter struct {
	env   *cel.Env
	ast   *cel.Ast
	prg   cel.Program
	limit uint64
	// maxCost caches the estimate per size class (a power of two): what a message whose largest
	// list, map or string has up to that many elements may cost at most.
	mu      sync.Mutex
	maxCost map[uint64]uint64
}

// whereEnv declares what a --where expression may read.
func whereEnv() (*cel.Env, error) {
	return cel.NewEnv(
		cel.Variable("payload", cel.DynType),
		cel.Variable("headers", cel.MapType(cel.StringType, cel.StringType)),
		// A JSON integer is an int (or uint) here, not a double: 9007199254740993 stays itself.
		// Integers and doubles still compare with each other (amountCents > 5e4).
		cel.CrossTypeNumericComparisons(true),
	)
}

// compileWhere compiles expr; its error names the line and column the way CEL reports them.
func compileWhere(expr string) (*whereFilter, error) {
	return compileWhereWithin(expr, whereCostLimit, whereCompileSizeHint)
}

// compileWhereWithin is compileWhere under a cost limit and a payload size of its own (tests).
func compileWhereWithin(expr string, limit, sizeHint uint64) (*whereFilter, error) {
	env, err := whereEnv()
	if err != nil {
		return nil, err
	}
	ast, iss := env.Compile(expr)
	if iss != nil && iss.Err() != nil {
		return nil, fmt.Errorf("%s", strings.TrimSpace(iss.Err().Error()))
	}
	if t := ast.OutputType(); t != cel.BoolType && t != cel.DynType {
		return nil, fmt.Errorf("the expression gives a %s; it must give true or false, e.g. payload.amountCents > 50000", t)
	}
	w := &whereFilter{env: env, ast: ast, limit: limit, maxCost: map[uint64]uint64{}}
	if est := w.costBound(sizeHint); est > limit {
		return nil, fmt.Errorf("the expression may cost up to %s per message on a payload whose lists and strings hold %d elements, over the limit of %d "+
			"(nested comprehensions over a payload list multiply: use one pass, or select by --ids-from or --failure-group first)",
			costWords(est), sizeHint, limit)
	}
	prg, err := env.Program(ast, cel.InterruptCheckFrequency(whereInterruptEvery))
	if err != nil {
		return nil, err
	}
	w.prg = prg
	return w, nil
}

// costBound is the most the expression can cost on a payload whose lists, maps and strings hold
// at most size elements, rounded up to a power of two and remembered.
func (w *whereFilter) costBound(size uint64) uint64 {
	class := uint64(1)
	for class < size {
		class <<= 1
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if c, ok := w.maxCost[class]; ok {
		return c
	}
	est, err := w.env.EstimateCost(w.ast, payloadSizes{max: class})
	c := est.Max
	if err != nil {
		c = math.MaxUint64
	}
	w.maxCost[class] = c
	return c
}

// payloadSizes tells the cost estimate that any list, map or string of the payload holds at most
// max elements, and leaves the cost of calls to CEL's own estimate.
type payloadSizes struct{ max uint64 }

func (p payloadSizes) EstimateSize(checker.AstNode) *checker.SizeEstimate {
	return &checker.SizeEstimate{Min: 0, Max: p.max}
}

func (payloadSizes) EstimateCallCost(string, string, *checker.AstNode, []checker.AstNode) *checker.CallEstimate {
	return nil
}

func costWords(c uint64) string {
	if c == math.MaxUint64 {
		return "an unbounded amount"
	}
	return fmt.Sprintf("%.3g", float64(c))
}

// whereOutcome is what --where made of one message.
type whereOutcome int

const (
	whereMatched whereOutcome = iota
	whereNotMatched
	// whereNotJSON: the body is not JSON; such a message is never matched by accident.
	whereNotJSON
	// whereError: the expression could not be evaluated on this message (a field it reads is
	// missing, a type it compares differs); not matched.
	whereError
)

// match evaluates the filter on one message, under ctx: a cancelled context ends a costly
// evaluation with ctx's error.
func (w *whereFilter) match(ctx context.Context, data []byte, h nats.Header) (whereOutcome, error) {
	payload, largest, err := decodePayload(data)
	if err != nil {
		return whereNotJSON, nil
	}
	headers := make(map[string]string, len(h))
	for k, v := range h {
		if len(v) > 0 {
			headers[k] = v[0]
			largest = max(largest, uint64(len(v[0])))
		}
	}
	if c := w.costBound(max(largest, uint64(len(headers)))); c > w.limit {
		return whereError, fmt.Errorf("%w: up to %s on a message whose largest list or string holds %d elements (limit %d)",
			errWhereTooCostly, costWords(c), largest, w.limit)
	}
	out, _, err := w.prg.ContextEval(ctx, map[string]any{"payload": payload, "headers": headers})
	if err != nil {
		if ctx.Err() != nil {
			return whereError, ctx.Err()
		}
		return whereError, err
	}
	if b, ok := out.Value().(bool); ok && b {
		return whereMatched, nil
	}
	if _, ok := out.Value().(bool); !ok {
		return whereError, fmt.Errorf("the expression gave %v, not true or false", out.Value())
	}
	return whereNotMatched, nil
}

// decodePayload decodes a JSON body with its numbers exact: an integer is an int64 (a uint64
// above int64's range), any other number a float64. CEL would otherwise see every number as a
// double, under which 9007199254740993 equals 9007199254740992. largest is the element count of
// its largest list or map, or the byte length of its longest string: what bounds its cost.
func decodePayload(data []byte) (payload any, largest uint64, err error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, 0, err
	}
	if _, err := dec.Token(); err == nil {
		return nil, 0, errors.New("more than one JSON value")
	}
	return exactNumbers(v, &largest), largest, nil
}

func exactNumbers(v any, largest *uint64) any {
	switch t := v.(type) {
	case json.Number:
		if i, err := t.Int64(); err == nil {
			return i
		}
		if u, err := strconv.ParseUint(string(t), 10, 64); err == nil {
			return u
		}
		f, _ := t.Float64()
		return f
	case string:
		*largest = max(*largest, uint64(len(t)))
	case map[string]any:
		*largest = max(*largest, uint64(len(t)))
		for k, e := range t {
			*largest = max(*largest, uint64(len(k)))
			t[k] = exactNumbers(e, largest)
		}
	case []any:
		*largest = max(*largest, uint64(len(t)))
		for i, e := range t {
			t[i] = exactNumbers(e, largest)
		}
	}
	return v
}
