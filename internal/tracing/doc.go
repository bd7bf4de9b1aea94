// Package tracing sends OpenTelemetry traces of replays when the standard OTEL_* environment asks
// for an exporter, and is off otherwise: then every span is the no-op one, and the callers skip
// the work of describing it (Enabled).
//
// What the spans are, their names and attributes, and how a replay links to the original delivery
// are in docs/tracing.md. No span carries a payload field or a raw event ID: events are named by
// EventIDHash.
package tracing
