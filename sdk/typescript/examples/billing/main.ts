#!/usr/bin/env node
// billing-consumer-ts: the billing example consumer in TypeScript, the same service as Go's
// examples/billing/cmd/billing-consumer: it charges each order through the fake payment provider
// (its charges in the ledger's database, table billing_provider_charges), mails a receipt, answers
// shadow requests on replay.shadow.billing, and answers look-ups from the provider's charges. It
// takes the Go example's flags (-database-url, -nats-url, -stream, -create-stream, -dlq-subject,
// -handlers) and, like it, reads DATABASE_URL and NATS_URL.

import { randomBytes } from "node:crypto";

import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { createServer } from "node:http";

import pg from "pg";
import { Registry } from "prom-client";

import { BusinessError, Consumer, type Effects, type Event, type LookupRequest } from "../../src/consumer.js";
import { Batcher } from "../../src/groupcommit.js";
import { Keyring } from "../../src/seal.js";
import { setupTracing } from "./tracing.js";
import { poolConfig } from "../../src/pgurl.js";

interface Flags {
  databaseURL: string;
  natsURL: string;
  stream: string;
  createStream: boolean;
  dlqSubject: string;
  handlers: number;
  liveVersion: number;
  shadowOnly: boolean;
  concurrency: number;
  recordsURL: string;
  leaseMs: number;
  retryBackoffMs: number;
  metricsAddr: string;
  resultKeyring: string;
  reconcileAfterMs: number;
  reconcileIntervalMs: number;
}

// goDuration reads a Go duration as the Go example's flags take it: "100ms", "6s", "1m30s".
function goDuration(s: string): number {
  const unit: Record<string, number> = { ns: 1e-6, us: 1e-3, "µs": 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
  let total = 0;
  const re = /([0-9.]+)(ns|us|µs|ms|s|m|h)/gy;
  let m: RegExpExecArray | null;
  let end = 0;
  while ((m = re.exec(s)) !== null) {
    total += Number(m[1]) * unit[m[2]];
    end = re.lastIndex;
  }
  if (s === "0") return 0;
  if (end !== s.length || s === "") throw new Error(`${JSON.stringify(s)} is not a duration such as 100ms, 6s or 2m`);
  return total;
}

function parseFlags(argv: string[]): Flags {
  const f: Flags = {
    databaseURL: process.env.REPLAYCTL_DATABASE_URL || process.env.DATABASE_URL || "postgres:///test?host=/var/run/postgresql",
    natsURL: process.env.NATS_URL || "nats://127.0.0.1:4222",
    stream: "BILLING", createStream: false, dlqSubject: "dlq.billing.charge", handlers: 64, liveVersion: 1,
    shadowOnly: false, concurrency: 32, recordsURL: "", leaseMs: 0, retryBackoffMs: 1000, metricsAddr: "",
    resultKeyring: process.env.REPLAYCTL_RESULT_KEYRING || "",
    reconcileAfterMs: process.env.REPLAYCTL_RECONCILE_AFTER ? goDuration(process.env.REPLAYCTL_RECONCILE_AFTER) : 0,
    reconcileIntervalMs: process.env.REPLAYCTL_RECONCILE_INTERVAL ? goDuration(process.env.REPLAYCTL_RECONCILE_INTERVAL) : 0,
  };
  for (let i = 0; i < argv.length; i++) {
    const [name, inline] = argv[i].replace(/^--?/, "").split(/=(.*)/s, 2);
    const value = () => inline ?? argv[++i];
    switch (name) {
      case "database-url": f.databaseURL = value(); break;
      case "nats-url": f.natsURL = value(); break;
      case "stream": f.stream = value(); break;
      case "create-stream": f.createStream = inline === undefined || inline === "true"; break;
      case "dlq-subject": f.dlqSubject = value(); break;
      case "handlers": f.handlers = Number(value()); break;
      case "live-version": f.liveVersion = Number(value()); break;
      case "shadow-only": f.shadowOnly = inline === undefined || inline === "true"; break;
      case "concurrency": f.concurrency = Number(value()); break;
      case "records-database-url": f.recordsURL = value(); break;
      case "metrics-addr": f.metricsAddr = value(); break;
      case "result-keyring": f.resultKeyring = value(); break;
      case "reconcile-after": f.reconcileAfterMs = goDuration(value()); break;
      case "reconcile-interval": f.reconcileIntervalMs = goDuration(value()); break;
      case "lease": f.leaseMs = goDuration(value()); break;
      case "retry-backoff": f.retryBackoffMs = goDuration(value()); break;
      case "log-level": value(); break; // accepted for the Go example's command lines; this one logs warnings only
      default:
        throw new Error(`unknown flag -${name}: use -database-url, -nats-url, -stream, -create-stream, -dlq-subject, -handlers, -live-version, -shadow-only, -concurrency, -metrics-addr, -records-database-url, -lease, -retry-backoff, -result-keyring, -reconcile-after, -reconcile-interval`);
    }
  }
  return f;
}

const recordsSchema = `
select pg_advisory_xact_lock(hashtext('billing records schema'));
create table if not exists billing_orders (event_id text primary key, order_id text not null);
create table if not exists billing_provider_charges (
    charge_id text primary key, order_id text not null, total_cents bigint not null, currency text not null,
    charged_at timestamptz not null default now());
create index if not exists billing_provider_charges_order on billing_provider_charges (order_id);
alter table billing_provider_charges add column if not exists operation_id text;`

interface Order {
  orderId: string;
  customer: string;
  amountCents: number;
  currency: string;
}

// feeCents is the fee under effect version: truncated before version 2 (the bug the demo replays).
function feeCents(amount: number, version: number): number {
  return version < 2 ? Math.trunc((amount * 29) / 1000) : Math.trunc((amount * 29 + 500) / 1000);
}

async function main(): Promise<void> {
  const f = parseFlags(process.argv.slice(2));
  // Installed before the consumer starts, as a service of your own installs its provider.
  const flushTraces = await setupTracing("billing-consumer-ts", (l) => process.stderr.write(`billing-consumer-ts: warning: ${l}\n`));
  // As many connections as handlers keep busy, up to 16: more only queue more backends on the
  // machine's cores (20,000 replayed at 311/s with 16, 230/s with 48, docs/benchmarks.md).
  const pool = new pg.Pool(poolConfig(f.databaseURL, Math.max(4, Math.min(f.handlers, 16))));
  // The orders and the provider's charges: the ledger's database unless -records-database-url.
  const records = f.recordsURL ? new pg.Pool(poolConfig(f.recordsURL)) : pool;
  for (const p of [pool, records]) p.on("error", () => undefined); // a killed idle session is replaced on next use
  await records.query(`begin; ${recordsSchema} commit;`);
  const nc = await connect({ servers: f.natsURL.split(","), name: "billing-consumer-ts", maxReconnectAttempts: -1, reconnectTimeWait: 250 });
  if (f.createStream) {
    const jsm = await jetstreamManager(nc);
    await jsm.streams.add({ name: f.stream, subjects: ["billing.>"] }).catch(() => undefined);
  }
  // The service's own rows go out as the Go example's do (internal/billing/batch.go): the rows of
  // concurrent handlers as one statement, one in flight, so the service writes at the speed of
  // PostgreSQL rather than one commit per row.
  const orders = new Batcher<{ eventId: string; orderId: string }, void>(async (rows) => {
    const last = new Map(rows.map((r) => [r.eventId, r.orderId])); // an upsert touches a row once per statement
    await records.query(`insert into billing_orders (event_id, order_id)
select * from unnest($1::text[], $2::text[])
on conflict (event_id) do update set order_id = excluded.order_id`, [[...last.keys()], [...last.values()]]);
    return rows.map(() => undefined);
  }, 256, 1);
  const charges = new Batcher<{ id: string; orderId: string; totalCents: number; currency: string }, void>(async (rows) => {
    await records.query(`insert into billing_provider_charges (charge_id, order_id, total_cents, currency)
select * from unnest($1::text[], $2::text[], $3::bigint[], $4::text[])`,
      [rows.map((r) => r.id), rows.map((r) => r.orderId), rows.map((r) => r.totalCents), rows.map((r) => r.currency)]);
    return rows.map(() => undefined);
  }, 256, 1);
  let calls = 0;
  const handler = async (ev: Event, fx: Effects) => {
    let o: Order;
    try {
      o = JSON.parse(Buffer.from(ev.payload).toString("utf8"));
    } catch (e) {
      throw new BusinessError(`payload is not an order: ${(e as Error).message}`);
    }
    if (!o.currency) throw new BusinessError("order has no currency");
    const fee = feeCents(o.amountCents, ev.effectVersion);
    const receipt = { status: "charged", orderId: o.orderId, amountCents: o.amountCents, feeCents: fee,
      totalCents: o.amountCents + fee, currency: o.currency, processedAt: new Date().toISOString() };
    if (ev.mode !== "shadow") {
      // The order is the service's own record, written before the charge: the look-up reads it.
      await orders.get({ eventId: ev.id, orderId: o.orderId });
    }
    await fx.call("payments.charge", "payments-api", async () => {
      calls++;
      const id = `ch_${o.orderId}_${randomBytes(4).toString("hex")}`;
      await charges.get({ id, orderId: o.orderId, totalCents: receipt.totalCents, currency: o.currency });
      return id;
    });
    await fx.call("email.receipt", "mailer", async () => {
      calls++;
      return `msg_${o.orderId}`;
    });
    return receipt;
  };
  const lookup = async (req: LookupRequest) => {
    const order = await records.query(`select order_id from billing_orders where event_id = $1`, [req.eventId]);
    if (order.rowCount === 0) {
      return { verdict: "unknown" as const, detail: `the billing service has no record of event ${req.eventId}'s order` };
    }
    const orderId: string = order.rows[0].order_id;
    const charges = await records.query(`select charge_id from billing_provider_charges where order_id = $1`, [orderId]);
    if (charges.rowCount === 0) return { verdict: "not_happened" as const, detail: `the payment provider has no charge for order ${orderId}` };
    if (charges.rowCount! > 1) return { verdict: "unknown" as const, detail: `order ${orderId} was charged ${charges.rowCount} times` };
    return { verdict: "happened" as const, detail: `order ${orderId} was charged once`,
      externalRefs: [{ kind: "payments.charge", target: "payments-api", ref: charges.rows[0].charge_id }] };
  };
  // -metrics-addr serves the SDK's metrics on http://<addr>/metrics, as the Go example does.
  const registry = new Registry();
  const metrics = f.metricsAddr ? createServer(async (req, res) => {
    if (req.url !== "/metrics") {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { "Content-Type": registry.contentType }).end(await registry.metrics());
  }) : undefined;
  if (metrics) {
    const [host, port] = [f.metricsAddr.slice(0, f.metricsAddr.lastIndexOf(":")), Number(f.metricsAddr.slice(f.metricsAddr.lastIndexOf(":") + 1))];
    await new Promise<void>((resolve, reject) => metrics.once("error", reject).listen(port, host || "127.0.0.1", resolve));
  }
  // -result-keyring (or REPLAYCTL_RESULT_KEYRING) seals the stored receipts, as the Go example does.
  const resultKeyring = f.resultKeyring ? Keyring.fromFile(f.resultKeyring) : undefined;
  const c = new Consumer({ metrics: registry, resultKeyring,
    ...(f.reconcileAfterMs > 0 ? { reconcileAfterMs: f.reconcileAfterMs } : {}),
    ...(f.reconcileIntervalMs > 0 ? { reconcileIntervalMs: f.reconcileIntervalMs } : {}), name: "billing", pool, nc, stream: f.stream, dlqSubject: f.dlqSubject, handler, lookup,
    liveVersion: f.liveVersion, retryBackoffMs: f.retryBackoffMs, concurrency: f.handlers,
    ...(f.leaseMs > 0 ? { leaseMs: f.leaseMs } : {}), log: (l) => process.stderr.write(`billing-consumer-ts: ${l}\n`) });
  const stopShadow = c.serveShadow();
  const stopLookup = c.serveLookup();
  process.stderr.write("billing-consumer-ts: answering shadow requests on replay.shadow.billing; Ctrl-C stops\n");
  const stop = new AbortController();
  process.on("SIGINT", () => stop.abort());
  process.on("SIGTERM", () => stop.abort());
  if (f.shadowOnly) {
    await new Promise((resolve) => stop.signal.addEventListener("abort", resolve));
  } else {
    await c.run(stop.signal);
  }
  stopShadow();
  stopLookup();
  await nc.drain();
  await pool.end();
  if (records !== pool) await records.end();
  metrics?.close();
  await flushTraces();
  process.stderr.write(`billing-consumer-ts: stopped; the payment provider received ${calls} calls\n`);
}

main().catch((e) => {
  process.stderr.write(`billing-consumer-ts: ${e instanceof Error ? e.message : e}\n`);
  process.exit(1);
});
