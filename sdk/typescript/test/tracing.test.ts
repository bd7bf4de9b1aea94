import { strict as assert } from "node:assert";
import { test } from "node:test";

import { SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";

import { Effects, NotExecutedError } from "../src/consumer.js";
import { endDelivery, eventIdHash, parseTraceparent, startDelivery } from "../src/tracing.js";

const exporter = new InMemorySpanExporter();
trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));

const producer = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
const failed = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

test("a delivery's span continues the message's trace, links the failed delivery, and names the event only by a hash", async () => {
  exporter.reset();
  const { span, ctx } = startDelivery("billing", { traceparent: producer, originalTraceparent: failed });
  const fx = new Effects(false, async () => undefined, ctx);
  await fx.call("payments.charge", "payments-api", async () => "ch_1");
  await assert.rejects(fx.call("email.receipt", "mailer", async () => {
    throw new NotExecutedError("connection refused to mailer for order-42");
  }));
  await assert.rejects(fx.call("payments.refund", "payments-api", async () => {
    throw new Error("timeout refunding order-42");
  }));
  endDelivery(span, { outcome: "uncertain", eventId: "evt-42", effectVersion: 2, jobId: "job-1", mode: "replay", delivery: 1 });

  const spans = exporter.getFinishedSpans();
  const byName = new Map(spans.map((s) => [s.name, s]));
  const deliver = byName.get("deliver billing")!;
  assert.equal(deliver.kind, SpanKind.CONSUMER);
  assert.equal(deliver.spanContext().traceId, "4bf92f3577b34da6a3ce929d0e0e4736", "not in the producer's trace");
  assert.equal(deliver.parentSpanContext?.spanId, "00f067aa0ba902b7");
  assert.deepEqual(deliver.links.map((l) => l.context.spanId), ["b7ad6b7169203331"]);
  assert.equal(deliver.attributes["replayctl.event_id.hash"], eventIdHash("evt-42"));
  assert.equal(deliver.attributes["replayctl.effect_version"], 2);
  assert.equal(deliver.attributes["replayctl.job.id"], "job-1");
  assert.equal(deliver.status.code, SpanStatusCode.ERROR);

  const charge = byName.get("effect payments.charge")!;
  assert.equal(charge.kind, SpanKind.CLIENT);
  assert.equal(charge.parentSpanContext?.spanId, deliver.spanContext().spanId);
  assert.deepEqual(charge.attributes, { "replayctl.effect.kind": "payments.charge", "replayctl.effect.call": 1 });
  assert.equal(byName.get("effect email.receipt")!.events[0].name, "not executed");
  assert.equal(byName.get("effect payments.refund")!.events[0].name, "uncertain");

  // Nothing of the event's content: no event ID, order, target or error text on any span.
  const everything = JSON.stringify(spans.map((s) => [s.attributes, s.events, s.status, s.links.map((l) => l.attributes)]));
  for (const secret of ["evt-42", "order-42", "payments-api", "mailer", "timeout"]) {
    assert.ok(!everything.includes(secret), `a span carries ${secret}`);
  }
});

test("a traceparent that is not one starts a trace of its own", () => {
  for (const bad of ["", "garbage", "00-00000000000000000000000000000000-00f067aa0ba902b7-01", "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"]) {
    assert.equal(parseTraceparent(bad), undefined, bad);
  }
  assert.equal(parseTraceparent(producer)?.spanId, "00f067aa0ba902b7");
});
