// Traces, as the Go SDK makes them (consumer/tracing.go, docs/tracing.md): a span per delivery
// ("deliver <consumer>", kind consumer) under the message's traceparent (the producer's, or
// execute's for a replay) and linked to the delivery that dead-lettered it
// (Replay-Original-Traceparent), with children for the claim, each external call ("effect
// <kind>", kind client) and the completion. The spans go to the OpenTelemetry API's global
// tracer provider: with none registered (the default) they cost nothing and go nowhere; a
// service registers its own, as the billing example does when OTEL_* names an exporter.
//
// Nothing of an event's content is on a span: the event is named by a hash of its ID, a
// failure by its class, never by an error's text (which may quote an order).

import { createHash } from "node:crypto";

import { context, SpanKind, SpanStatusCode, trace, TraceFlags, type Context, type Link, type Span } from "@opentelemetry/api";

/** The attribute names the Go SDK uses. */
export const attributes = {
  consumer: "replayctl.consumer",
  jobId: "replayctl.job.id",
  effectVersion: "replayctl.effect_version",
  outcome: "replayctl.outcome",
  eventIdHash: "replayctl.event_id.hash",
  mode: "replayctl.mode",
  delivery: "replayctl.delivery",
  effectKind: "replayctl.effect.kind",
  effectCall: "replayctl.effect.call",
  reason: "replayctl.reason",
} as const;

const tracerName = "github.com/replayctl/replayctl/sdk/typescript";

/** The first 8 bytes of SHA-256 of the event ID, hex: how a span names an event. */
export function eventIdHash(eventId: string): string {
  return createHash("sha256").update(eventId, "utf8").digest("hex").slice(0, 16);
}

// A W3C traceparent: version 00, a 16-byte trace ID, an 8-byte span ID, the flags.
const traceparentPattern = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** The remote span context a traceparent header names, or undefined when it names none. */
export function parseTraceparent(value: string | undefined): { traceId: string; spanId: string; traceFlags: number; isRemote: true } | undefined {
  const m = traceparentPattern.exec((value ?? "").trim());
  if (!m || /^0+$/.test(m[1]) || /^0+$/.test(m[2])) return undefined;
  return { traceId: m[1], spanId: m[2], traceFlags: parseInt(m[3], 16) & TraceFlags.SAMPLED, isRemote: true };
}

/** What a delivery's span starts from: the message's headers as the consumer read them. */
export interface DeliveryHeaders {
  traceparent?: string;
  originalTraceparent?: string;
}

// remoteParent is the context a span continues: the traceparent's remote span, else the active one.
function remoteParent(traceparent: string | undefined): Context {
  const remote = parseTraceparent(traceparent);
  return remote ? trace.setSpanContext(context.active(), remote) : context.active();
}

/** Starts the span of one delivery and returns it with the context its children start in. */
export function startDelivery(consumer: string, h: DeliveryHeaders): { span: Span; ctx: Context } {
  const parent = remoteParent(h.traceparent);
  const links: Link[] = [];
  const original = parseTraceparent(h.originalTraceparent);
  if (original) links.push({ context: original, attributes: { "replayctl.link": "original delivery" } });
  const span = trace.getTracer(tracerName).startSpan(`deliver ${consumer}`, {
    kind: SpanKind.CONSUMER, links, attributes: { [attributes.consumer]: consumer, "messaging.system": "nats" },
  }, parent);
  return { span, ctx: trace.setSpan(parent, span) };
}

/** What a delivery came to, for its span. */
export interface DeliveryEnd {
  outcome: string;
  eventId: string;
  effectVersion: number;
  jobId: string;
  mode: string;
  delivery: number;
  /** The class of a failure (an SDK cause, never an error's text). */
  reason?: string;
}

// The outcomes that end a delivery well; "in_progress" is noted; the rest fail the span.
const settled = new Set(["completed", "duplicate", "reconciled", "business_failure"]);

/** Describes the delivery's outcome on its span and ends it. */
export function endDelivery(span: Span, e: DeliveryEnd): void {
  if (!span.isRecording()) return;
  span.setAttribute(attributes.outcome, e.outcome);
  span.setAttribute(attributes.delivery, e.delivery);
  if (e.eventId) span.setAttribute(attributes.eventIdHash, eventIdHash(e.eventId));
  if (e.effectVersion) span.setAttribute(attributes.effectVersion, e.effectVersion);
  if (e.jobId) {
    span.setAttribute(attributes.jobId, e.jobId);
    span.setAttribute(attributes.mode, e.mode);
  }
  if (settled.has(e.outcome)) span.setStatus({ code: SpanStatusCode.OK });
  else if (e.outcome === "in_progress") span.addEvent("in progress elsewhere");
  else fail(span, e.outcome, e.reason ?? "");
  span.end();
}

/** Notes a fault on a span and marks it failed, with a class that carries no event data. */
export function fail(span: Span, event: string, reason: string): void {
  span.addEvent(event, { [attributes.reason]: reason });
  span.setStatus({ code: SpanStatusCode.ERROR, message: `${event}: ${reason}` });
}

/** How a span says a step failed: an event and a class, never the error's text. */
export type Failure = (e: unknown) => { event: string; reason: string };

const failedByName: Failure = (e) => ({ event: "failed", reason: e instanceof Error ? e.name : "error" });

/** Runs step inside a child span of ctx named name, failed when it throws (by class, not text). */
export async function inSpan<T>(ctx: Context | undefined, name: string, step: () => Promise<T>,
  opts: { kind?: SpanKind; attributes?: Record<string, string | number>; failure?: Failure } = {}): Promise<T> {
  if (!ctx || !trace.getSpan(ctx)?.isRecording()) return step();
  const span = trace.getTracer(tracerName).startSpan(name, { kind: opts.kind ?? SpanKind.INTERNAL, attributes: opts.attributes }, ctx);
  try {
    const out = await context.with(trace.setSpan(ctx, span), step);
    span.end();
    return out;
  } catch (e) {
    const f = (opts.failure ?? failedByName)(e);
    fail(span, f.event, f.reason);
    span.end();
    throw e;
  }
}

/** Starts the span of one shadow request, a child of `replayctl shadow`'s request span. */
export function startShadow(consumer: string, h: { traceparent?: string; eventId?: string; jobId?: string }): Span {
  const parent = remoteParent(h.traceparent);
  const attrs: Record<string, string> = { [attributes.consumer]: consumer, [attributes.mode]: "shadow" };
  if (h.eventId) attrs[attributes.eventIdHash] = eventIdHash(h.eventId);
  if (h.jobId) attrs[attributes.jobId] = h.jobId;
  return trace.getTracer(tracerName).startSpan(`shadow ${consumer}`, { kind: SpanKind.SERVER, attributes: attrs }, parent);
}

/** Ends a shadow request's span with its status and the calls the handler would make. */
export function endShadow(span: Span, status: string, calls: number): void {
  if (!span.isRecording()) return;
  span.setAttribute(attributes.outcome, status);
  span.setAttribute("replayctl.calls", calls);
  if (status !== "ok") fail(span, "shadow error", "the handler failed in shadow mode");
  span.end();
}
