// Package conformance drives a consumer under test over NATS and the ledger through the rules of
// the consumer protocol (docs/protocol.md) and says, for each, whether the consumer kept it and
// what was seen. The consumer under test is the reference billing service in any language: the
// billing stream and subjects, the SDK's consumer name "billing", and the fake payment provider's
// charges table (billing_provider_charges), which is how the kit counts external calls. It prints
// nothing; cmd/conformance wires it.
package conformance

import (
	"context"
	"time"
)

// Rule is one rule of the protocol and how to check it against a running consumer.
type Rule struct {
	// Name is stable: the kit's --rules and --json use it.
	Name string `json:"name"`
	// Says is the rule in one sentence.
	Says  string `json:"says"`
	check func(ctx context.Context, e *Env) error
}

// Result is one rule's verdict.
type Result struct {
	Rule string `json:"rule"`
	Says string `json:"says"`
	Pass bool   `json:"pass"`
	// Saw is what the kit observed: on a failure, what broke the rule.
	Saw     string  `json:"saw"`
	Seconds float64 `json:"seconds"`
}

// Report is every rule's result, in the order run.
type Report struct {
	Results []Result `json:"results"`
	Passed  int      `json:"passed"`
	Failed  int      `json:"failed"`
}

// Rules returns every rule, in the order the kit runs them.
func Rules() []Rule { return append([]Rule(nil), rules...) }

// Run checks each rule in turn against the consumer e reaches. Each rule uses events of its own,
// so one broken rule does not fail the next.
func Run(ctx context.Context, e *Env, selected []Rule, timeout time.Duration) Report {
	var r Report
	for _, rule := range selected {
		start := time.Now()
		rctx, cancel := context.WithTimeout(ctx, timeout)
		err := rule.check(rctx, e)
		cancel()
		res := Result{Rule: rule.Name, Says: rule.Says, Pass: err == nil, Seconds: time.Since(start).Seconds()}
		if err != nil {
			res.Saw = err.Error()
			r.Failed++
		} else {
			res.Saw = "as the rule says"
			r.Passed++
		}
		r.Results = append(r.Results, res)
	}
	return r
}
