// The reconcile worker, as the Go SDK's (consumer/reconcile_worker.go, package reconcile): it
// asks the consumer's look-up, over NATS as `replayctl reconcile` does (so any instance may
// answer), about the consumer's rows uncertain (or stuck with a call started) for reconcileAfter
// and due for a look-up, and applies the verdicts with reconcile's compare-and-set: happened
// makes the row reconciled; not_happened and unknown leave it uncertain, marked for manual
// review. Nothing is ever retried.

import { randomBytes } from "node:crypto";

import type { NatsConnection } from "@nats-io/transport-node";
import type { Pool } from "pg";

import * as ledger from "./ledger.js";

/** The longest a due row waits between look-ups (the Go SDK's ledger.MaxLookupBackoff). */
const maxLookupBackoffMs = 24 * 3600 * 1000;
/** How long after its lease lapsed a processing row with a call started is stuck (ledger.StuckLeaseAfter). */
export const stuckLeaseAfterMs = 15 * 60 * 1000;
/** Rows listed per pass, per kind; the rest wait for the next pass. */
const listLimit = 1000;
const applyBatch = 500;
const askAtOnce = 16;
/** A look-up's own bound and a little for the round trip (the Go SDK's reconcileLookupTimeout). */
const lookupTimeoutMs = 35_000;
/** What the report quotes of a reply: it goes to the ledger and the audit log. */
const maxQuoted = 300;

/** What one pass did. */
export interface ReconcileReport {
  runId: string;
  listed: number;
  reconciled: number;
  manualReview: number;
  unanswered: number;
  /** Verdicts whose row changed since it was listed, left alone. */
  changed: number;
}

export interface ReconcileDeps {
  pool: Pool;
  nc: NatsConnection;
  consumer: string;
  olderThanMs: number;
  actor: string;
}

/** One pass: list, ask, apply, audit. Throws when no look-up could be asked (nothing changed). */
export async function reconcileUncertain(d: ReconcileDeps): Promise<ReconcileReport> {
  const runId = `reconcile-${new Date().toISOString().replace(/[-:]/g, "").replace("T", "-").slice(0, 15)}-${randomBytes(6).toString("hex")}`;
  const report: ReconcileReport = { runId, listed: 0, reconciled: 0, manualReview: 0, unanswered: 0, changed: 0 };
  const rows = [
    ...(await ledger.uncertainPage(d.pool, d.consumer, false, d.olderThanMs, listLimit, maxLookupBackoffMs, stuckLeaseAfterMs)),
    ...(await ledger.uncertainPage(d.pool, d.consumer, true, d.olderThanMs, listLimit, maxLookupBackoffMs, stuckLeaseAfterMs)),
  ];
  report.listed = rows.length;
  if (rows.length === 0) return report;
  const subject = `replay.reconcile.${d.consumer}`;
  const verdicts: ledger.ReconcileVerdict[] = [];
  let firstProblem = "";
  for (let i = 0; i < rows.length; i += askAtOnce) {
    const answers = await Promise.all(rows.slice(i, i + askAtOnce).map((row) => ask(d, subject, row)));
    for (const a of answers) {
      if ("verdict" in a) verdicts.push(a);
      else {
        report.unanswered++;
        firstProblem ||= a.problem;
      }
    }
  }
  if (verdicts.length === 0) {
    throw new Error(`none of the ${rows.length} look-ups on ${subject} got a usable reply (first: ${firstProblem}); nothing was changed`);
  }
  for (let i = 0; i < verdicts.length; i += applyBatch) {
    const batch = verdicts.slice(i, i + applyBatch);
    const applied = await ledger.reconcileApply(d.pool, d.consumer, d.actor, runId, batch, stuckLeaseAfterMs);
    for (const a of applied) {
      if (a.state === "reconciled") report.reconciled++;
      else report.manualReview++;
    }
    report.changed += batch.length - applied.length;
  }
  await ledger.auditInsert(d.pool, d.actor, "reconcile.run", { run: runId, consumer: d.consumer, olderThan: goDuration(d.olderThanMs),
    listed: report.listed, truncated: false, reconciled: report.reconciled, manualReview: report.manualReview,
    unanswered: report.unanswered, changedSinceListed: report.changed });
  return report;
}

// ask sends one look-up request as `replayctl reconcile` does; a reply that breaks the protocol
// is no answer (acting on it could reconcile a row on a mixed-up verdict). No responder at all
// fails the pass.
async function ask(d: ReconcileDeps, subject: string, row: ledger.UncertainRow): Promise<ledger.ReconcileVerdict | { problem: string }> {
  const refs = Array.isArray(row.externalRefs) ? row.externalRefs : [];
  const req = { consumer: d.consumer, eventId: row.eventId, effectVersion: row.effectVersion, requestHash: row.requestHash,
    requestHashAlg: row.requestHashAlg, externalRefs: refs, callsStarted: row.callsStarted, jobId: row.jobId };
  let data: Uint8Array;
  try {
    data = (await d.nc.request(subject, JSON.stringify(req), { timeout: lookupTimeoutMs })).data;
  } catch (e) {
    const msg = (e as Error).message ?? String(e);
    if (/no responders/i.test(msg)) {
      throw new Error(`no responder for consumer ${d.consumer}: nothing is subscribed to ${subject}; nothing was changed`);
    }
    return { problem: `no reply: ${msg}` };
  }
  let rep: { eventId?: unknown; verdict?: unknown; externalRefs?: unknown; detail?: unknown };
  try {
    rep = JSON.parse(Buffer.from(data).toString("utf8"));
  } catch (e) {
    return { problem: `the reply is not a look-up reply (docs/protocol.md): ${(e as Error).message}`.slice(0, maxQuoted) };
  }
  if (rep.eventId !== row.eventId) return { problem: `the reply is for event ${JSON.stringify(rep.eventId)}, not ${JSON.stringify(row.eventId)}` };
  if (rep.verdict !== "happened" && rep.verdict !== "not_happened" && rep.verdict !== "unknown") {
    return { problem: `the reply has verdict ${JSON.stringify(rep.verdict)}; the protocol knows happened, not_happened and unknown` };
  }
  return { row, verdict: rep.verdict, foundRefs: Array.isArray(rep.externalRefs) ? rep.externalRefs : [],
    note: typeof rep.detail === "string" ? [...rep.detail].slice(0, maxQuoted).join("") : "" };
}

// goDuration writes ms as Go prints a time.Duration ("15m0s"), as the Go worker's audit entries do.
function goDuration(ms: number): string {
  const h = Math.floor(ms / 3_600_000);
  const m = Math.floor((ms % 3_600_000) / 60_000);
  const s = (ms % 60_000) / 1000;
  return (h > 0 ? `${h}h${m}m` : m > 0 ? `${m}m` : "") + `${s}s`;
}
