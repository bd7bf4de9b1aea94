import { strict as assert } from "node:assert";
import { test } from "node:test";

import { Registry } from "prom-client";

import { Meters } from "../src/metrics.js";

// The Go SDK's names (consumer/metrics.go: MetricDeliveries ...), one series per consumer, so one
// dashboard and docs/alerts.yml serve Go and TypeScript instances alike.
test("the metrics carry the Go SDK's names and count deliveries by outcome", async () => {
  const registry = new Registry();
  const m = new Meters("billing", registry);
  for (const outcome of ["completed", "duplicate", "duplicate", "conflict"]) m.delivered(outcome);
  m.lapsed();
  m.interrupted("missed_heartbeat");
  m.interrupted("missed_heartbeat");
  m.interrupted("durable_gone");
  const text = await registry.metrics();
  for (const [name, value] of [
    ["idempotency_deliveries_total", 4],
    ["idempotency_duplicate_deliveries_total", 2],
    ["key_payload_mismatch_total", 1],
    ["processing_lease_expired_total", 1],
    ["uncertain_state_age_seconds", 0],
    ["idempotency_uncertain_rows", 0],
  ] as const) {
    assert.match(text, new RegExp(`^${name}\\{consumer="billing"\\} ${value}$`, "m"), name);
  }
  assert.match(text, /^consumer_pull_interruptions_total\{consumer="billing",reason="missed_heartbeat"\} 2$/m);
  assert.match(text, /^consumer_pull_interruptions_total\{consumer="billing",reason="durable_gone"\} 1$/m);
});
