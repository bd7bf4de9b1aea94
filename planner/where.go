package planner

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/nats-io/nats.go"
)

// whereFilter is plan's --where: a CEL expression over a message's JSON body (`payload`) and its
// headers (`headers`, name to first value) that must be true for the message to be selected.
type whereFilter struct {
	prg cel.Program
}

// whereEnv declares what a --where expression may read.
func whereEnv() (*cel.Env, error) {
	return cel.NewEnv(
		cel.Variable("payload", cel.DynType),
		cel.Variable("headers", cel.MapType(cel.StringType, cel.StringType)),
	)
}

// compileWhere compiles expr; its error names the line and column the way CEL reports them.
func compileWhere(expr string) (*whereFilter, error) {
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
	prg, err := env.Program(ast)
	if err != nil {
		return nil, err
	}
	return &whereFilter{prg: prg}, nil
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

// match evaluates the filter on one message.
func (w *whereFilter) match(data []byte, h nats.Header) (whereOutcome, error) {
	var payload any
	if err := json.Unmarshal(data, &payload); err != nil {
		return whereNotJSON, nil
	}
	headers := make(map[string]string, len(h))
	for k, v := range h {
		if len(v) > 0 {
			headers[k] = v[0]
		}
	}
	out, _, err := w.prg.Eval(map[string]any{"payload": payload, "headers": headers})
	if err != nil {
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
