package cmdutil

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/itchyny/gojq"
)

// JQOutput applies --jq to what a command writes on stdout under --json: it holds the output
// until the command ends, then runs the filter over each JSON document in it, as gh's --jq does.
// A string result is printed bare, anything else as compact JSON, one result a line.
type JQOutput struct {
	code *gojq.Code
	out  io.Writer
	buf  bytes.Buffer
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

func (j *JQOutput) Write(p []byte) (int, error) { return j.buf.Write(p) }

// flush runs the filter over the held documents and writes the results.
func (j *JQOutput) flush() error {
	dec := json.NewDecoder(&j.buf)
	dec.UseNumber()
	for {
		var doc any
		if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return fmt.Errorf("--jq: the command's output is not JSON: %w", err)
		}
		iter := j.code.Run(normaliseNumbers(doc))
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
