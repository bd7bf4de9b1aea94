// The consumer's Prometheus metrics, under the Go SDK's names and help (consumer/metrics.go), so
// one dashboard and docs/alerts.yml serve a fleet of either: deliveries, duplicates, payload
// mismatches, lapsed leases found, and the uncertain rows read from the ledger every few seconds.
// Deliveries and duplicates also go to the ledger's daily counts (delivery_counts), which
// `replayctl ledger stats` turns into the replay rate.

import { Counter, Gauge, type Registry } from "prom-client";
import type { Pool } from "pg";

import * as ledger from "./ledger.js";

export const METRIC_DELIVERIES = "idempotency_deliveries_total";
export const METRIC_DUPLICATE_DELIVERIES = "idempotency_duplicate_deliveries_total";
export const METRIC_PAYLOAD_MISMATCHES = "key_payload_mismatch_total";
export const METRIC_LEASE_EXPIRIES = "processing_lease_expired_total";
export const METRIC_UNCERTAIN_AGE = "uncertain_state_age_seconds";
export const METRIC_UNCERTAIN_ROWS = "idempotency_uncertain_rows";
export const METRIC_PULL_INTERRUPTIONS = "consumer_pull_interruptions_total";

export class Meters {
  private readonly deliveries: Counter;
  private readonly duplicates: Counter;
  private readonly mismatches: Counter;
  private readonly lapses: Counter;
  private readonly uncertainAge: Gauge;
  private readonly uncertainRows: Gauge;
  private readonly pullInterruptions: Counter;
  private unflushedDeliveries = 0;
  private unflushedDuplicates = 0;

  constructor(readonly consumer: string, registry?: Registry) {
    const registers = registry ? [registry] : [];
    const labels = { consumer };
    const counter = (name: string, help: string) => {
      const c = new Counter({ name, help, labelNames: ["consumer"], registers });
      c.labels(labels).inc(0);
      return c;
    };
    const gauge = (name: string, help: string) => new Gauge({ name, help, labelNames: ["consumer"], registers });
    this.deliveries = counter(METRIC_DELIVERIES, "Messages the idempotency SDK handled, redeliveries included.");
    this.duplicates = counter(METRIC_DUPLICATE_DELIVERIES,
      "Deliveries answered from the idempotency ledger without running the handler: the event was already done.");
    this.mismatches = counter(METRIC_PAYLOAD_MISMATCHES,
      "Deliveries refused because their Event-Id is stored with a different payload fingerprint.");
    this.lapses = counter(METRIC_LEASE_EXPIRIES,
      "Processing leases this instance found lapsed (a handler crashed, stalled or outlived its lease).");
    this.uncertainAge = gauge(METRIC_UNCERTAIN_AGE,
      "How long the consumer's oldest uncertain ledger row has been uncertain, 0 when none; read from the ledger every few seconds.");
    this.uncertainRows = gauge(METRIC_UNCERTAIN_ROWS, "The consumer's uncertain ledger rows: external writes waiting for a look-up or a person.");
    this.pullInterruptions = new Counter({ name: METRIC_PULL_INTERRUPTIONS, labelNames: ["consumer", "reason"], registers,
      help: "Interruptions of the consumer's pull iterator (missed heartbeats, leader changes, re-created iterators) that Run rode through." });
    this.uncertainAge.labels(labels).set(0);
    this.uncertainRows.labels(labels).set(0);
  }

  /** Counts one interruption of the pull the consumer rode through, by reason. */
  interrupted(reason: string): void {
    this.pullInterruptions.labels({ consumer: this.consumer, reason }).inc();
  }

  /** Counts one handled delivery by its outcome. */
  delivered(outcome: string): void {
    const l = { consumer: this.consumer };
    this.deliveries.labels(l).inc();
    this.unflushedDeliveries++;
    if (outcome === "duplicate") {
      this.duplicates.labels(l).inc();
      this.unflushedDuplicates++;
    } else if (outcome === "conflict") {
      this.mismatches.labels(l).inc();
    }
  }

  /** Counts another instance's lease found lapsed. */
  lapsed(): void {
    this.lapses.labels({ consumer: this.consumer }).inc();
  }

  /** Adds the deliveries since the last flush to the ledger's daily counts and reads the uncertain rows. */
  async flush(pool: Pool): Promise<void> {
    const [d, u] = [this.unflushedDeliveries, this.unflushedDuplicates];
    this.unflushedDeliveries = this.unflushedDuplicates = 0;
    try {
      await ledger.deliveryCountsAdd(pool, this.consumer, d, u);
    } catch (e) {
      this.unflushedDeliveries += d; // added to the next flush
      this.unflushedDuplicates += u;
      throw e;
    }
    const s = await ledger.uncertainSummary(pool, this.consumer);
    this.uncertainRows.labels({ consumer: this.consumer }).set(s.count);
    this.uncertainAge.labels({ consumer: this.consumer }).set(s.oldestMs / 1000);
  }
}
