// The consumer: replayctl's protocol (docs/protocol.md) around a handler, as the Go SDK's
// consumer package keeps it. Each delivery is decided from the event's ledger rows (duplicate,
// conflict, another instance's lease, a lapsed lease after a call, a tombstone for the look-up),
// then claimed under a lease, handled with every external call marked started before it is made,
// and recorded before the message is acknowledged.

import { randomBytes } from "node:crypto";
import { hostname } from "node:os";

import { AckPolicy, jetstream, jetstreamManager, type ConsumerMessages, type JsMsg } from "@nats-io/jetstream";
import { headers as natsHeaders, type Msg, type NatsConnection, type Subscription } from "@nats-io/transport-node";
import type { Pool } from "pg";

import type { Registry } from "prom-client";

import { payloadHash, v1, v2, type Hasher, type Options as FingerprintOptions } from "./fingerprint.js";
import { GroupCommit, Batcher, type GroupQueue, type GroupStats } from "./groupcommit.js";
import * as ledger from "./ledger.js";
import { Meters } from "./metrics.js";
import { reconcileUncertain, type ReconcileReport } from "./reconcile.js";
import { resultContext, type Keyring } from "./seal.js";
import { termReasonRead } from "./term.js";
import { endDelivery, endShadow, inSpan, startDelivery, startShadow, type DeliveryEnd, type Failure } from "./tracing.js";
import { SpanKind, type Context } from "@opentelemetry/api";

/** An event as the handler sees it. */
export interface Event {
  id: string;
  subject: string;
  payload: Uint8Array;
  mode: "live" | "replay" | "shadow";
  effectVersion: number;
  jobId: string;
  writeForbidden: boolean;
  delivery: number;
}

/** One external call a handler made or, shadowed or write-forbidden, would have made. */
export interface Effect {
  kind: string;
  target: string;
  ref?: string;
  suppressed?: boolean;
}

/** A terminal business failure: stored as the result, acknowledged, never retried. */
export class BusinessError extends Error {
  override name = "BusinessError";
}

/** A failed call that certainly did not run (a refused connection): safe to retry. */
export class NotExecutedError extends Error {
  override name = "NotExecutedError";
}

/** The handler's result: a JSON value stored as the event's result body. */
export type Result = unknown;

export type Handler = (ev: Event, fx: Effects) => Promise<Result>;

/** A look-up's answer about an event whose outcome the ledger cannot prove. */
export interface LookupResult {
  verdict: "happened" | "not_happened" | "unknown";
  externalRefs?: Effect[];
  detail?: string;
}

/** What a look-up is asked: one event's row, without its payload. */
export interface LookupRequest {
  eventId: string;
  effectVersion: number;
  jobId: string;
  requestHash: string;
  /** The calls the row recorded so far; the one whose outcome is unknown is not among them. */
  externalRefs?: Effect[];
  callsStarted?: number;
}

/** Asks the provider whether an event's effect exists. A read: it must write nothing. */
export type Lookup = (req: LookupRequest) => Promise<LookupResult>;

export interface Config {
  name: string;
  pool: Pool;
  nc: NatsConnection;
  stream: string;
  dlqSubject: string;
  handler: Handler;
  lookup?: Lookup;
  durable?: string;
  liveVersion?: number;
  leaseMs?: number;
  retryBackoffMs?: number;
  maxDeliver?: number;
  /** Messages handled at once; default 64. */
  concurrency?: number;
  fingerprint?: FingerprintOptions;
  resultRetentionMs?: number;
  evidenceRetentionMs?: number;
  log?: (line: string) => void;
  /** Registers the consumer's metrics there (the Go SDK's names); counted either way. */
  metrics?: Registry;
  /** How often deliveries go to the ledger's daily counts and the uncertain gauges are read; default 5 s. */
  countsIntervalMs?: number;
  /**
   * Seals every stored result body (AES-256-GCM, the Go SDK's format: seal.ts), bound to its row;
   * the result hash stays over the plaintext, so shadow compares on it, or opens the bodies when
   * given the keyring (`replayctl shadow --keyring`).
   */
  resultKeyring?: Keyring;
  /**
   * With a lookup, run() also runs the reconcile worker: it asks the look-up about rows uncertain
   * (or stuck with a call started) for reconcileAfterMs (default 15 min) every reconcileIntervalMs
   * (default 1 min, doubled after a failed pass up to 30 min).
   */
  reconcileAfterMs?: number;
  reconcileIntervalMs?: number;
}

const day = 24 * 3600 * 1000;

/** Records each external call; suppresses them when shadowed or write-forbidden. */
export class Effects {
  readonly recorded: Effect[] = [];
  made = 0;
  unknown: Error | undefined;
  constructor(
    private readonly suppress: boolean,
    private readonly starting: (n: number) => Promise<void>,
    /** The delivery's trace context: each call made gets a span under it. */
    private readonly traceCtx?: Context,
  ) {}

  /** Runs call, the external call of kind on target, unless suppressed; returns its reference. */
  async call(kind: string, target: string, call: () => Promise<string>): Promise<string> {
    if (this.suppress) {
      this.recorded.push({ kind, target, suppressed: true });
      return "";
    }
    const n = this.recorded.length + 1;
    await this.starting(n); // committed before the call: a crash mid-call leaves the row uncertain
    this.recorded.push({ kind, target });
    this.made++;
    try {
      // The span names the kind and the call's number, not its target (an account is the payload's).
      const ref = await inSpan(this.traceCtx, `effect ${kind}`, call, { kind: SpanKind.CLIENT,
        attributes: { "replayctl.effect.kind": kind, "replayctl.effect.call": n }, failure: callFailure });
      this.recorded[n - 1].ref = ref || undefined;
      return ref;
    } catch (e) {
      if (e instanceof NotExecutedError) {
        this.made--;
        this.recorded.pop();
      } else {
        this.unknown = e as Error;
      }
      throw e;
    }
  }
}

// callFailure is how a call's span says it failed: "not executed" with proof it did not run,
// "uncertain" when the write may have happened.
const callFailure: Failure = (e) => e instanceof NotExecutedError
  ? { event: "not executed", reason: "NotExecutedError" }
  : { event: "uncertain", reason: "the call's outcome is unknown" };

export class Consumer {
  private readonly cfg: Required<Omit<Config, "lookup" | "fingerprint" | "log" | "metrics" | "resultKeyring">> & Pick<Config, "lookup" | "log" | "resultKeyring">;
  private readonly meters: Meters;
  private readonly hasher: Hasher;
  private readonly owner: string;
  private registered = false;
  private readonly group = new GroupCommit();
  private readonly reads: Batcher<string, ledger.EffectRow[]>;
  private readonly claims: GroupQueue<ledger.Claim>;
  private readonly marks: GroupQueue<{ key: ledger.EffectKey; owner: string; ordinal: number }>;
  private readonly completions: GroupQueue<ledger.Completion>;
  private readonly beats: GroupQueue<{ key: ledger.EffectKey; owner: string; leaseMs: number }>;

  constructor(cfg: Config) {
    this.cfg = {
      durable: cfg.name, liveVersion: 1, leaseMs: 120_000, retryBackoffMs: 1000, maxDeliver: 5, concurrency: 64, countsIntervalMs: 5000,
      resultRetentionMs: 7 * day, evidenceRetentionMs: 30 * day,
      reconcileAfterMs: 15 * 60_000, reconcileIntervalMs: 60_000, ...cfg,
    } as Consumer["cfg"];
    this.hasher = v2(cfg.fingerprint ?? {});
    this.meters = new Meters(cfg.name, cfg.metrics);
    // host-pid-hex, as the Go SDK names its instances: whoever reviews a row finds the process.
    this.owner = `${hostname()}-${process.pid}-${randomBytes(4).toString("hex")}`;
    const pool = this.cfg.pool;
    this.reads = new Batcher((ids) => ledger.effectsForEventsRows(pool, cfg.name, ids));
    this.claims = this.group.queue((c) => ledger.claim(pool, c), (cs) => ledger.claimBatch(pool, cs));
    this.marks = this.group.queue((m) => ledger.callStarted(pool, m.key, m.owner, m.ordinal), (ms) => ledger.callStartedBatch(pool, ms));
    this.completions = this.group.queue((c) => ledger.complete(pool, c), (cs) => ledger.completeBatch(pool, cs));
    this.beats = this.group.queue((b) => ledger.heartbeat(pool, b.key, b.owner, b.leaseMs), (bs) => ledger.heartbeatBatch(pool, bs));
  }

  /** What the group committer and the batched reads sent so far: statements against rows. */
  get stats(): GroupStats & { readStatements: number; reads: number } {
    return { ...this.group.stats, readStatements: this.reads.statements, reads: this.reads.calls };
  }

  /** Answers shadow requests until the returned function is called. */
  serveShadow(): () => void {
    const sub: Subscription = this.cfg.nc.subscribe(`replay.shadow.${this.cfg.name}`, {
      queue: "replayctl-shadow",
      callback: (_err, msg) => void this.shadow(msg),
    });
    return () => sub.unsubscribe();
  }

  private async shadow(msg: Msg): Promise<void> {
    const h = msg.headers;
    const span = startShadow(this.cfg.name, { traceparent: h?.get("Traceparent"), eventId: h?.get("Event-Id"), jobId: h?.get("Replay-Job") });
    const reply = (body: ShadowReply) => {
      endShadow(span, body.status, body.effects.length);
      msg.respond(JSON.stringify(body));
    };
    await this.answerShadow(msg, reply);
  }

  private async answerShadow(msg: Msg, reply: (body: ShadowReply) => void): Promise<void> {
    const h = msg.headers;
    const id = h?.get("Event-Id") ?? "";
    const version = Number(h?.get("Replay-Effect-Version") ?? "");
    if (!validEventID(id) || h?.get("Replay-Mode") !== "shadow" || !validJobID(h?.get("Replay-Job") ?? "") || !validVersion(h?.get("Replay-Effect-Version") ?? "")) {
      reply({ eventId: id, status: "error", effects: [], error: "a shadow request needs Event-Id, Replay-Mode: shadow, Replay-Job and Replay-Effect-Version" });
      return;
    }
    const ev: Event = { id, subject: msg.subject, payload: msg.data, mode: "shadow", effectVersion: version,
      jobId: h!.get("Replay-Job"), writeForbidden: true, delivery: 1 };
    const fx = new Effects(true, async () => undefined);
    let outcome: StoredResult;
    try {
      outcome = storedResult(await this.cfg.handler(ev, fx));
    } catch (e) {
      if (!(e instanceof BusinessError)) {
        reply({ eventId: id, status: "error", effects: fx.recorded, error: String((e as Error).message ?? e) });
        return;
      }
      outcome = storedResult(undefined, e);
    }
    reply({ eventId: id, status: "ok", resultHash: outcome.hash, result: outcome.body, effects: fx.recorded });
  }

  /**
   * Answers look-ups on replay.reconcile.<name> (queue group replayctl-reconcile), as `replayctl
   * reconcile` asks about uncertain rows. A malformed request, one for another consumer, a failing
   * look-up and a verdict outside the protocol are answered unknown: the requester changes nothing.
   */
  serveLookup(): () => void {
    const sub: Subscription = this.cfg.nc.subscribe(`replay.reconcile.${this.cfg.name}`, {
      queue: "replayctl-reconcile",
      callback: (_err, msg) => void this.answerLookup(msg),
    });
    return () => sub.unsubscribe();
  }

  private async answerLookup(msg: Msg): Promise<void> {
    let eventId = "";
    let reply: LookupResult;
    try {
      const req = JSON.parse(Buffer.from(msg.data).toString("utf8"));
      eventId = typeof req.eventId === "string" ? req.eventId : "";
      if (req.consumer !== this.cfg.name || !validEventID(eventId)) {
        reply = { verdict: "unknown", detail: `not a look-up of consumer ${this.cfg.name}'s events` };
      } else if (!this.cfg.lookup) {
        reply = { verdict: "unknown", detail: "the consumer has no look-up" };
      } else {
        reply = await this.cfg.lookup({ eventId, effectVersion: req.effectVersion, jobId: req.jobId ?? "",
          requestHash: req.requestHash, externalRefs: req.externalRefs ?? [], callsStarted: req.callsStarted ?? 0 });
        if (!["happened", "not_happened", "unknown"].includes(reply.verdict)) {
          reply = { verdict: "unknown", detail: `the look-up answered ${JSON.stringify(reply.verdict)}, not a verdict` };
        }
      }
    } catch (e) {
      reply = { verdict: "unknown", detail: `the look-up failed: ${(e as Error).message}` };
    }
    msg.respond(JSON.stringify({ eventId, verdict: reply.verdict, externalRefs: reply.externalRefs ?? [],
      detail: (reply.detail ?? "").slice(0, 500) }));
  }

  /** One pass of the reconcile worker (Config.reconcileAfterMs); run() repeats it when a lookup is set. */
  reconcileUncertain(): Promise<ReconcileReport> {
    return reconcileUncertain({ pool: this.cfg.pool, nc: this.cfg.nc, consumer: this.cfg.name,
      olderThanMs: this.cfg.reconcileAfterMs, actor: `reconcile-worker ${this.owner}` });
  }

  // reconcileWorker runs a pass now and then every interval, twice as long after a failed pass
  // (up to 30 min), until signal aborts; a pass under way finishes (each batch it applies is one
  // statement).
  private async reconcileWorker(signal: AbortSignal): Promise<void> {
    const interval = this.cfg.reconcileIntervalMs;
    let wait = interval;
    while (!signal.aborted) {
      try {
        const r = await this.reconcileUncertain();
        wait = interval;
        if (r.listed > 0) {
          this.cfg.log?.(`reconcile worker: run ${r.runId} looked up ${r.listed} uncertain row(s): ${r.reconciled} reconciled, ` +
            `${r.manualReview} for manual review, ${r.unanswered} unanswered, ${r.changed} changed since listed`);
        }
      } catch (e) {
        wait = Math.min(2 * wait, Math.max(30 * 60_000, interval));
        this.cfg.log?.(`reconcile worker: the pass failed (${(e as Error).message}); the next one waits ${Math.round(wait / 1000)}s`);
      }
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, wait);
        signal.addEventListener("abort", () => { clearTimeout(t); resolve(); }, { once: true });
      });
    }
  }

  /**
   * Consumes the stream until signal aborts. What interrupts the pull (missed heartbeats, the
   * durable deleted, the iterator ending) is ridden through as the Go SDK does: the durable and
   * the iterator are made again, waiting longer after each interruption in a row, and counted in
   * consumer_pull_interruptions_total by reason.
   */
  async run(signal: AbortSignal): Promise<void> {
    // The first pull is opened before anything starts: a bad configuration (no such stream) is
    // said at once, and nothing is left running behind the error.
    let messages: Pull | undefined = await this.openPull();
    const flush = () => this.meters.flush(this.cfg.pool).catch((e) => this.cfg.log?.(`flushing the delivery counts: ${e}`));
    const counting = setInterval(flush, this.cfg.countsIntervalMs);
    const reconciling = this.cfg.lookup ? this.reconcileWorker(signal) : Promise.resolve();
    if (!termReasonRead(this.cfg.nc.info?.version)) {
      this.cfg.log?.(`nats-server ${this.cfg.nc.info?.version ?? "(unknown version)"} does not read a term's reason before 2.10.4: ` +
        "refused, conflicting and uncertain messages are termed without one, so their MSG_TERMINATED advisories carry no reason");
    }
    const inFlight = new Set<Promise<void>>();
    let streak = 0;
    while (!signal.aborted) {
      if (messages === undefined) {
        try {
          messages = await this.openPull();
        } catch (e) {
          this.interrupted("reopen_failed", `open the durable ${this.cfg.durable} on ${this.cfg.stream}: ${(e as Error).message}`);
          await sleep(backoffAfter(++streak), signal);
          continue;
        }
      }
      const pull: Pull = messages;
      messages = undefined; // made again if this one ends
      const close = () => void pull.close();
      let closedFor = ""; // the interruption that closed the iterator, counted once
      signal.addEventListener("abort", close, { once: true });
      void (async () => {
        for await (const st of pull.status()) {
          if (st.type === "heartbeats_missed") this.interrupted("missed_heartbeat", `no pull heartbeat from ${this.cfg.stream}`);
          if (st.type === "consumer_deleted" || st.type === "consumer_not_found") {
            if (!closedFor) this.interrupted((closedFor = "durable_gone"), `the durable ${this.cfg.durable} is gone: made again`);
            void pull.close();
          }
        }
      })().catch(() => undefined);
      for await (const m of pull) {
        streak = 0;
        const p = this.process(m).then(
          () => undefined,
          (e) => {
            // A ledger or NATS failure decided nothing: the message comes back.
            this.cfg.log?.(`event ${m.headers?.get("Event-Id") ?? "?"}: ${e instanceof Error ? e.message : e}; retried`);
            m.nak(this.cfg.retryBackoffMs);
          },
        );
        inFlight.add(p);
        void p.finally(() => inFlight.delete(p));
        if (inFlight.size >= this.cfg.concurrency) await Promise.race(inFlight);
      }
      signal.removeEventListener("abort", close);
      if (!signal.aborted) {
        if (!closedFor) this.interrupted("iterator_closed", `the pull on ${this.cfg.stream} ended: made again`);
        await sleep(backoffAfter(++streak), signal);
      }
    }
    await Promise.all(inFlight);
    await reconciling;
    clearInterval(counting);
    await flush();
  }

  // openPull makes the durable (or updates it to this configuration) and starts pulling from it.
  private async openPull(): Promise<Pull> {
    return (await this.openDurable()).consume({ max_messages: this.cfg.concurrency });
  }

  // openDurable makes the durable (or updates it to this configuration) and returns it.
  private async openDurable() {
    const jsm = await jetstreamManager(this.cfg.nc);
    const config = { durable_name: this.cfg.durable, ack_policy: AckPolicy.Explicit, ack_wait: 2 * (this.cfg.leaseMs / 4) * 1_000_000, max_deliver: -1 };
    try {
      await jsm.consumers.update(this.cfg.stream, this.cfg.durable, config);
    } catch {
      await jsm.consumers.add(this.cfg.stream, config);
    }
    return jetstream(this.cfg.nc).consumers.get(this.cfg.stream, this.cfg.durable);
  }

  private handlings = 0;

  // leaseOwner names one handling's lease: the instance, '#', and a number no other handling of
  // this instance has (the Go SDK's format; replayctl shows the instance).
  private leaseOwner(): string {
    return `${this.owner}#${++this.handlings}`;
  }

  // term tells the server never to redeliver m, with the reason where the server reads one.
  private term(m: JsMsg, reason: string): void {
    if (termReasonRead(this.cfg.nc.info?.version)) m.term(reason.slice(0, 1000));
    else m.term();
  }

  private interrupted(reason: string, why: string): void {
    this.meters.interrupted(reason);
    this.cfg.log?.(`pull interrupted (${reason}): ${why}`);
  }

  /** Handles one delivery end to end and says what happened. */
  async process(m: JsMsg): Promise<string> {
    const { span, ctx } = startDelivery(this.cfg.name, { traceparent: m.headers?.get("Traceparent"),
      originalTraceparent: m.headers?.get("Replay-Original-Traceparent") });
    const end: DeliveryEnd = { outcome: "", eventId: "", effectVersion: 0, jobId: "", mode: "live", delivery: m.info.deliveryCount };
    try {
      end.outcome = await this.decide(m, ctx, end);
    } catch (e) {
      endDelivery(span, { ...end, outcome: "retrying", reason: "the ledger or NATS failed" });
      throw e;
    }
    endDelivery(span, end);
    this.meters.delivered(end.outcome);
    return end.outcome;
  }

  private async decide(m: JsMsg, traceCtx: Context, end: DeliveryEnd): Promise<string> {
    const h = m.headers;
    const id = h?.get("Event-Id") ?? "";
    const ev: Event = { id, subject: m.subject, payload: m.data, mode: "live", effectVersion: this.cfg.liveVersion,
      jobId: "", writeForbidden: false, delivery: m.info.deliveryCount };
    if (validEventID(id)) end.eventId = id;
    end.effectVersion = ev.effectVersion;
    if (!validEventID(id)) return this.deadLetter(m, ev, "invalid message", `the Event-Id header is missing or invalid`);
    const job = h?.get("Replay-Job") ?? "";
    let anyVersionSettles = true;
    if (job !== "") {
      ev.mode = "replay";
      ev.jobId = job;
      const mode = h!.get("Replay-Mode");
      const version = h!.get("Replay-Effect-Version");
      const wf = h!.get("Replay-Write-Forbidden").toLowerCase();
      if ((mode !== "" && mode !== "execute") || !validJobID(job) || !validVersion(version) || !["", "true", "false"].includes(wf)) {
        return this.deadLetter(m, ev, "invalid message", `event ${JSON.stringify(id)} of job ${job}: a replay header is invalid`);
      }
      ev.effectVersion = Number(version);
      ev.writeForbidden = wf === "true";
      Object.assign(end, { effectVersion: ev.effectVersion, jobId: job, mode: "replay" });
      const reg = await this.registry(ev.effectVersion, job);
      anyVersionSettles = reg.sourceKind !== "backfill";
      if (!reg.executing) {
        this.term(m, `replay refused: version ${ev.effectVersion} is not registered as executing for job ${job}`);
        return "refused";
      }
    }
    if (!this.registered) {
      await ledger.registerAlgorithm(this.cfg.pool, this.cfg.name, this.hasher.algorithm, this.hasher.optionsEncoded);
      this.registered = true;
    }
    const rows = await this.reads.get(id);
    const key: ledger.EffectKey = { consumer: this.cfg.name, eventId: id, effectVersion: ev.effectVersion };

    // Conflicts, under each row's own algorithm.
    const incoming = rows.map((r) => this.hashUnder(r.requestHashAlg, ev.payload));
    for (let i = 0; i < rows.length; i++) {
      if (incoming[i] === undefined) {
        this.term(m, `event ${id}: its row's fingerprint algorithm ${rows[i].requestHashAlg} is not this consumer's`);
        return "conflict";
      }
      if (rows[i].requestHash !== incoming[i]) {
        this.term(m, `event ${id}: the payload differs from the one stored under effect version ${rows[i].effectVersion}`);
        return "conflict";
      }
    }
    for (const r of rows) {
      if ((r.state === "completed" || r.state === "reconciled") && (r.effectVersion === ev.effectVersion || (anyVersionSettles && !r.writeForbidden))) {
        m.ack();
        return "duplicate";
      }
    }
    if (rows.some((r) => r.state === "uncertain")) {
      this.term(m, `event ${id}: a ledger row is uncertain; it is never retried automatically`);
      return "uncertain";
    }
    for (const r of rows) {
      if (r.state !== "processing") continue;
      if (!r.leaseLive) this.meters.lapsed();
      if (r.leaseLive) {
        m.nak(Math.max(r.leaseRemainingMs, 100));
        return "in_progress";
      }
      if (r.callsStarted > 0) {
        const lapsed = { ...key, effectVersion: r.effectVersion };
        if (!(await ledger.markLapsedUncertain(this.cfg.pool, lapsed))) {
          m.nak(this.cfg.leaseMs / 4);
          return "in_progress";
        }
        this.term(m, `event ${id}: the lease of ${r.leaseOwner} lapsed after ${r.callsStarted} call(s) started: uncertain`);
        return "uncertain";
      }
    }
    const hash = this.hasher.sum(ev.payload);
    const tombstones = rows.filter((r) => r.state === "expired" && (ev.mode === "live" || r.effectVersion === ev.effectVersion));
    if (tombstones.length > 0) {
      const met = await this.meetExpired(m, ev, key, hash, tombstones.map((t) => t.effectVersion));
      if (met !== undefined) return met;
    }
    const current = tombstones.length > 0 ? await this.reads.get(id) : rows;
    const own = current.findIndex((r) => r.effectVersion === ev.effectVersion);
    const ownHash = own >= 0 ? this.hashUnder(current[own].requestHashAlg, ev.payload) : undefined;
    // The lease names this handling, not only this instance: a redelivery handled here while the
    // first handling still runs (stalled past its lease) must not pass the owner checks of the
    // first's marks and completion, or both make the call (the Go SDK's leaseOwner).
    const owner = this.leaseOwner();
    const claimed = await inSpan(traceCtx, "claim", () => this.claims.submit(rowKey(key), {
      key, requestHash: hash, requestHashAlg: this.hasher.algorithm, owner, leaseMs: this.cfg.leaseMs, jobId: ev.jobId,
      anyVersionSettles,
      takeOverHash: own >= 0 ? (ownHash ?? "") : hash, takeOverHashAlg: own >= 0 ? current[own].requestHashAlg : this.hasher.algorithm,
    }, `${key.consumer}\u001f${key.eventId}`));
    if (!claimed) {
      m.nak(this.backoff(ev.delivery));
      return "in_progress";
    }
    return this.handle(m, ev, key, owner, traceCtx);
  }

  // registry caches a yes for a few seconds, never a no (docs/protocol.md, "Execute messages"): a
  // replay's thousands of messages ask once, and a cancelled job is refused within seconds.
  private readonly executing = new Map<string, { at: number; sourceKind: string }>();
  private async registry(version: number, job: string): Promise<{ executing: boolean; sourceKind: string }> {
    const key = `${version}\u001f${job}`;
    const hit = this.executing.get(key);
    if (hit && Date.now() - hit.at < 5000) return { executing: true, sourceKind: hit.sourceKind };
    const reg = await ledger.replayExecuting(this.cfg.pool, this.cfg.name, version, job);
    if (reg.executing) this.executing.set(key, { at: Date.now(), sourceKind: reg.sourceKind });
    else this.executing.delete(key);
    return reg;
  }

  private hashUnder(alg: string, payload: Uint8Array): string | undefined {
    if (alg === "none") return "none"; // matches any payload (fingerprint.NoneHash)
    if (alg === this.hasher.algorithm) return this.hasher.sum(payload);
    if (alg === "canonical-json-v1") return v1().sum(payload);
    return undefined;
  }

  private async meetExpired(m: JsMsg, ev: Event, key: ledger.EffectKey, hash: string, versions: number[]): Promise<string | undefined> {
    let res: LookupResult = { verdict: "unknown", detail: "the consumer has no look-up" };
    if (this.cfg.lookup) {
      try {
        res = await this.cfg.lookup({ eventId: ev.id, effectVersion: ev.effectVersion, jobId: ev.jobId, requestHash: hash });
      } catch (e) {
        res = { verdict: "unknown", detail: `the look-up failed: ${(e as Error).message}` };
      }
    }
    if (res.verdict === "not_happened") {
      // The tombstones become received rows; the event is then claimed and run as a new one.
      await ledger.reopenExpired(this.cfg.pool, this.cfg.name, ev.id, versions, res.detail ?? "", this.owner);
      return undefined;
    }
    await ledger.applyExpiredVerdict(this.cfg.pool, {
      key, requestHash: hash, requestHashAlg: this.hasher.algorithm, verdict: res.verdict, note: res.detail ?? "",
      externalRefs: res.externalRefs ?? [], jobId: ev.jobId, actor: this.owner, evidenceRetentionMs: this.cfg.evidenceRetentionMs,
    });
    if (res.verdict === "happened") {
      m.ack();
      return "reconciled";
    }
    this.term(m, `event ${ev.id}: its evidence expired and the look-up answered ${res.verdict}: review it by hand`);
    return "uncertain";
  }

  private async handle(m: JsMsg, ev: Event, key: ledger.EffectKey, owner: string, traceCtx: Context): Promise<string> {
    const fx = new Effects(ev.writeForbidden, async (n) => {
      if (!(await this.marks.submit(rowKey(key), { key, owner, ordinal: n }))) {
        throw new Error(`the lease on ${key.eventId} is no longer live: the call was not made`);
      }
    }, traceCtx);
    const beat = setInterval(() => {
      void this.beats.submit(rowKey(key), { key, owner, leaseMs: this.cfg.leaseMs }).catch(() => undefined);
      m.working();
    }, this.cfg.leaseMs / 4);
    let result: Result;
    let business: BusinessError | undefined;
    let failure: Error | undefined;
    try {
      result = await this.cfg.handler(ev, fx);
    } catch (e) {
      if (e instanceof BusinessError) business = e;
      else failure = e as Error;
    } finally {
      clearInterval(beat);
    }
    if (fx.unknown) {
      await ledger.markUncertain(this.cfg.pool, key, owner, fx.made, fx.recorded, `${fx.unknown.message}; the write may have happened`);
      this.term(m, `event ${ev.id}: an external call's outcome is unknown: uncertain`);
      return "uncertain";
    }
    if (failure) {
      if (fx.made > 0) {
        await ledger.markUncertain(this.cfg.pool, key, owner, fx.made, fx.recorded, `the handler failed after ${fx.made} call(s): ${failure.message}`);
        this.term(m, `event ${ev.id}: failed after a call was made: uncertain`);
        return "uncertain";
      }
      await ledger.release(this.cfg.pool, key, owner, failure.message.slice(0, 1000));
      if (ev.delivery >= this.cfg.maxDeliver) return this.deadLetter(m, ev, "transient failure", failure.message);
      m.nak(this.backoff(ev.delivery));
      return "retrying";
    }
    const stored = storedResult(result, business);
    const kr = this.cfg.resultKeyring;
    const body = kr ? kr.sealJSON(stored.json, resultContext(key.consumer, key.eventId, key.effectVersion)) : stored.json;
    const done = await inSpan(traceCtx, "complete", () => this.completions.submit(rowKey(key), {
      key, owner, resultHash: stored.hash, resultBody: body, outcomeKind: business ? "business" : "",
      effectCount: fx.made, externalRefs: fx.recorded, lastError: business?.message ?? "", writeForbidden: ev.writeForbidden,
      resultRetentionMs: this.cfg.resultRetentionMs, evidenceRetentionMs: this.cfg.evidenceRetentionMs,
    }));
    if (!done) {
      if (fx.made > 0) {
        this.term(m, `event ${ev.id}: ${fx.made} call(s) made but the outcome could not be recorded: review it by hand`);
        return "uncertain";
      }
      m.nak(this.backoff(ev.delivery));
      return "retrying";
    }
    m.ack();
    return business ? "business_failure" : "completed";
  }

  private backoff(delivery: number): number {
    return Math.min(this.cfg.retryBackoffMs * 2 ** Math.max(0, delivery - 1), 60_000);
  }

  private async deadLetter(m: JsMsg, ev: Event, reason: string, detail: string): Promise<string> {
    const h = natsHeaders();
    if (ev.id) h.set("Event-Id", ev.id);
    h.set("Dlq-Reason", reason);
    h.set("Dlq-Reason-Detail", detail.slice(0, 1000));
    h.set("Dlq-Original-Subject", m.subject);
    h.set("Dlq-Attempts", String(m.info.deliveryCount));
    h.set("Dlq-Failed-At", new Date().toISOString());
    h.set("Nats-Msg-Id", `dlq:${this.cfg.name}:${m.info.streamSequence}`);
    for (const k of ["Replay-Job", "Replay-Mode", "Replay-Effect-Version", "Replay-Write-Forbidden"]) {
      const v = m.headers?.get(k);
      if (v) h.set(k, v);
    }
    await jetstream(this.cfg.nc).publish(this.cfg.dlqSubject, m.data, { headers: h });
    m.ack();
    return "dead_lettered";
  }
}

/** The reply to a shadow request (docs/protocol.md, "Shadow request and reply"). */
interface ShadowReply {
  eventId: string;
  status: "ok" | "error";
  effects: Effect[];
  resultHash?: string;
  result?: unknown;
  error?: string;
}

/** A handling's result as the ledger stores it and shadow answers it, with its fingerprint. */
interface StoredResult {
  body: unknown;
  json: string;
  hash: string;
}

// storedResult is the handler's result, or for a terminal business failure {"error": message},
// the one shape shadow counts as a failure (docs/protocol.md, "Shadow request and reply").
function storedResult(result: Result, business?: BusinessError): StoredResult {
  const body = business ? { error: business.message } : (result ?? null);
  const json = JSON.stringify(body);
  return { body, json, hash: payloadHash(Buffer.from(json)) };
}

/** One pull from the durable: its messages, its status notifications, and close. */
type Pull = ConsumerMessages;

// backoffAfter is the wait before making the pull again after n interruptions in a row: 250 ms
// doubling to 10 s.
function backoffAfter(n: number): number {
  return Math.min(250 * 2 ** Math.max(0, n - 1), 10_000);
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => {
      clearTimeout(t);
      resolve();
    }, { once: true });
  });
}

// rowKey names one row for the group committer; an event ID holds no control character, so the
// separator cannot be forged.
function rowKey(k: ledger.EffectKey): string {
  return `${k.consumer}\u001f${k.eventId}\u001f${k.effectVersion}`;
}

function validEventID(id: string): boolean {
  return id.length > 0 && Buffer.byteLength(id) <= 256 && id === id.trim() && !/[\u0000-\u001f\u007f]/.test(id);
}

function validJobID(job: string): boolean {
  return /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/.test(job);
}

function validVersion(v: string): boolean {
  return /^[1-9][0-9]{0,9}$/.test(v) && Number(v) <= 2147483647;
}
