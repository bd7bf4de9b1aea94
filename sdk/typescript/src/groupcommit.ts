// Group commit, as the Go SDK's ledger/groupcommit.go: PostgreSQL commits a few thousand one-row
// statements a second but tens of thousands of rows a second in batched ones, and node-postgres
// spends most of a statement's cost in its socket writes, so the keyed row writes of concurrent
// handlers (claims, call-started marks, completions, heartbeats) go out as one statement per kind
// (the Go SDK's unnest statements), each caller answered with its own row's result. The reads
// before the claims are coalesced the same way.
//
// There is no timer: a lone caller is sent at once through the single-row statement, and callers
// arriving while statements of their kind are in flight share the next one. Node runs this on one
// thread, so the bookkeeping needs no lock.

import pg from "pg";

/** What the group committer sent since the consumer started. */
export interface GroupStats {
  /** Statements sent (a batch, or a single-row statement) and the requests they carried. */
  statements: number;
  rows: number;
  /** Multi-row statements, and batches re-run one row at a time after failing as a whole. */
  batches: number;
  fallbacks: number;
}

/** Caps the rows of one statement, as the Go SDK's defaultGroupMaxBatch. */
export const defaultMaxBatch = 256;
/** Statements of one kind in flight at once: batching must not take every pooled connection. */
export const defaultFlushers = 2;

interface Request<T> {
  key: string;
  // event, when set, is a second key held while in flight: a claim's event across its versions,
  // so one batch never carries two claims of one event.
  event?: string;
  arg: T;
  resolve: (ok: boolean) => void;
  reject: (e: unknown) => void;
}

/**
 * The queues of one consumer. A key is never in two statements in flight, of any kind: two
 * batches then never lock the same rows in opposite orders, and a key is at most once in a batch,
 * so each returned row answers exactly one caller.
 */
export class GroupCommit {
  readonly stats: GroupStats = { statements: 0, rows: 0, batches: 0, fallbacks: 0 };
  readonly inflight = new Set<string>();
  private readonly queues: GroupQueue<never>[] = [];

  constructor(
    readonly maxBatch = defaultMaxBatch,
    readonly flushers = defaultFlushers,
  ) {}

  /** A queue whose lone requests go through single and whose batches through batch. */
  queue<T>(single: (arg: T) => Promise<boolean>, batch: (args: T[]) => Promise<boolean[]>): GroupQueue<T> {
    const q = new GroupQueue<T>(this, single, batch);
    this.queues.push(q as unknown as GroupQueue<never>);
    return q;
  }

  /** Starts every queue whose requests waited for keys just released. */
  kick(): void {
    for (const q of this.queues) q.kick();
  }
}

export class GroupQueue<T> {
  private pending: Request<T>[] = [];
  private flushing = 0;

  constructor(
    private readonly g: GroupCommit,
    private readonly single: (arg: T) => Promise<boolean>,
    private readonly batch: (args: T[]) => Promise<boolean[]>,
  ) {}

  /** Queues one request and resolves with its row's answer: false when its guard did not hold. */
  submit(key: string, arg: T, event?: string): Promise<boolean> {
    return new Promise((resolve, reject) => {
      this.pending.push({ key, event, arg, resolve, reject });
      this.kick();
    });
  }

  kick(): void {
    while (this.flushing < this.g.flushers && this.pending.some((r) => !this.busy(r))) {
      this.flushing++;
      void this.flush();
    }
  }

  private busy(r: Request<T>): boolean {
    return this.g.inflight.has(r.key) || (r.event !== undefined && this.g.inflight.has(r.event));
  }

  private take(): Request<T>[] {
    const taken: Request<T>[] = [];
    const rest: Request<T>[] = [];
    for (const r of this.pending) {
      if (taken.length < this.g.maxBatch && !this.busy(r)) {
        this.g.inflight.add(r.key);
        if (r.event !== undefined) this.g.inflight.add(r.event);
        taken.push(r);
      } else {
        rest.push(r);
      }
    }
    this.pending = rest;
    return taken;
  }

  private async flush(): Promise<void> {
    try {
      for (let batch = this.take(); batch.length > 0; batch = this.take()) {
        const answers = await this.send(batch);
        // Keys are released before their callers hear back: a caller's next request of the same
        // row must not find it still held.
        for (const r of batch) {
          this.g.inflight.delete(r.key);
          if (r.event !== undefined) this.g.inflight.delete(r.event);
        }
        batch.forEach((r, i) => {
          const a = answers[i];
          if ("error" in a) r.reject(a.error);
          else r.resolve(a.ok);
        });
      }
    } finally {
      this.flushing--;
      this.g.kick();
    }
  }

  private async send(batch: Request<T>[]): Promise<Answer[]> {
    this.g.stats.statements++;
    this.g.stats.rows += batch.length;
    if (batch.length === 1) return [await this.sendAlone(batch[0])];
    this.g.stats.batches++;
    try {
      const oks = await this.batch(batch.map((r) => r.arg));
      return oks.map((ok) => ({ ok }));
    } catch (e) {
      if (!(e instanceof pg.DatabaseError)) {
        // The connection failed: whether the statement committed is unknown, and each caller
        // handles that as it does for its own statement (the message comes back).
        return batch.map(() => ({ error: e }));
      }
      // The server refused the statement as a whole, so none of it was applied: one row's bad
      // value must not fail the others, which go again one at a time.
      this.g.stats.fallbacks++;
      const answers: Answer[] = [];
      for (const r of batch) answers.push(await this.sendAlone(r));
      return answers;
    }
  }

  private async sendAlone(r: Request<T>): Promise<Answer> {
    try {
      return { ok: await this.single(r.arg) };
    } catch (e) {
      return { error: e };
    }
  }
}

type Answer = { ok: boolean } | { error: unknown };

/**
 * Coalesces calls that one statement can answer together: a lone caller is sent alone, callers
 * arriving while statements are in flight share the next one. The SDK batches its reads with it
 * (they change nothing, so a failed one fails its callers and nothing else); a service can batch
 * its own writes (a failed statement fails every row in it: each caller treats it as a write that
 * may have happened).
 */
export class Batcher<K, V> {
  private pending: { key: K; resolve: (v: V) => void; reject: (e: unknown) => void }[] = [];
  private flushing = 0;
  /** Statements sent, and the calls they answered. */
  statements = 0;
  calls = 0;

  constructor(
    private readonly send: (keys: K[]) => Promise<V[]>,
    private readonly maxBatch = defaultMaxBatch,
    private readonly flushers = defaultFlushers,
  ) {}

  get(key: K): Promise<V> {
    return new Promise((resolve, reject) => {
      this.pending.push({ key, resolve, reject });
      while (this.flushing < this.flushers && this.pending.length > 0) {
        this.flushing++;
        void this.flush();
      }
    });
  }

  private async flush(): Promise<void> {
    try {
      while (this.pending.length > 0) {
        const batch = this.pending.splice(0, this.maxBatch);
        this.statements++;
        this.calls += batch.length;
        try {
          const values = await this.send(batch.map((r) => r.key));
          batch.forEach((r, i) => r.resolve(values[i]));
        } catch (e) {
          for (const r of batch) r.reject(e);
        }
      }
    } finally {
      this.flushing--;
    }
  }
}
