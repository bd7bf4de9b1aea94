package idempotency

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// Answers the middleware counts, by route, in idempotency_api_requests_total's answer label.
const (
	answerHandled       = "handled"
	answerReplayed      = "replayed"
	answerInProgress    = "in_progress"
	answerMismatch      = "mismatch"
	answerMissingKey    = "missing_key"
	answerInvalidKey    = "invalid_key"
	answerNoKey         = "no_key"
	answerForbidden     = "forbidden"
	answerUncertain     = "uncertain"
	answerAlreadyDone   = "already_done"
	answerUnavailable   = "ledger_unavailable"
	answerUnreadable    = "unreadable"
	answerTooLarge      = "too_large"
	answerUnauthorized  = "unauthenticated"
	answerHandlerFailed = "handler_failed"
)

// metrics are the middleware's Prometheus counters. Labels are route templates and answers,
// never a key, a client or a payload field.
type metrics struct {
	requests  *prometheus.CounterVec
	uncertain *prometheus.CounterVec
	lookups   *prometheus.CounterVec
	late      *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "idempotency_api_requests_total",
			Help: "API requests the idempotency middleware answered, by route and answer (handled, replayed, in_progress, mismatch, uncertain, ...).",
		}, []string{"route", "answer"}),
		uncertain: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "idempotency_api_uncertain_total",
			Help: "API records that became uncertain (an external call may have happened without an outcome), by route.",
		}, []string{"route"}),
		lookups: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "idempotency_api_lookups_total",
			Help: "Look-ups of expired keys and uncertain records, by route and verdict (happened, not_happened, unknown, error).",
		}, []string{"route", "verdict"}),
		late: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "idempotency_api_late_completions_total",
			Help: "Requests whose handler finished after its lease lapsed and its record became uncertain or was settled, by route and what the record was (uncertain, reconciled_happened, reconciled_not_happened: a look-up's verdict corrected).",
		}, []string{"route", "was"}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.requests, m.uncertain, m.lookups, m.late} {
		if err := reg.Register(c); err != nil {
			if already, ok := errors.AsType[prometheus.AlreadyRegisteredError](err); ok {
				switch existing := already.ExistingCollector.(type) {
				case *prometheus.CounterVec:
					switch c {
					case m.requests:
						m.requests = existing
					case m.uncertain:
						m.uncertain = existing
					case m.lookups:
						m.lookups = existing
					case m.late:
						m.late = existing
					}
					continue
				}
			}
			return nil, err
		}
	}
	return m, nil
}
