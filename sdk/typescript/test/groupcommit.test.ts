import { strict as assert } from "node:assert";
import { test } from "node:test";

import pg from "pg";

import { Batcher, GroupCommit } from "../src/groupcommit.js";

// A gate the test opens when it wants a statement to answer.
function gate(): { wait: Promise<void>; open: () => void } {
  let open = () => undefined as void;
  const wait = new Promise<void>((resolve) => (open = resolve));
  return { wait, open };
}

test("a lone request is sent at once on its own; those arriving meanwhile share one statement", async () => {
  const g = new GroupCommit(256, 1);
  const sent: string[][] = [];
  const first = gate();
  const q = g.queue<string>(
    async (arg) => {
      sent.push([arg]);
      if (arg === "a") await first.wait;
      return arg !== "refused";
    },
    async (args) => {
      sent.push(args);
      return args.map((a) => a !== "refused");
    },
  );
  const a = q.submit("k-a", "a");
  assert.deepEqual(sent, [["a"]], "the lone request waited for company");
  const rest = ["b", "refused", "c"].map((x) => q.submit(`k-${x}`, x));
  assert.equal(sent.length, 1, "requests went out while a statement of their kind was in flight and no flusher was free");
  first.open();
  assert.deepEqual(await Promise.all([a, ...rest]), [true, true, false, true]);
  assert.deepEqual(sent, [["a"], ["b", "refused", "c"]]);
  assert.deepEqual(g.stats, { statements: 2, rows: 4, batches: 1, fallbacks: 0 });
});

test("a key is never in two statements in flight, of any kind, nor twice in one", async () => {
  const g = new GroupCommit(256, 2);
  const inFlight = new Set<string>();
  let overlaps = 0;
  const hold = gate();
  const statement = async (keys: string[]) => {
    for (const k of keys) {
      if (inFlight.has(k)) overlaps++;
      inFlight.add(k);
    }
    await hold.wait;
    for (const k of keys) inFlight.delete(k);
    return keys.map(() => true);
  };
  const claims = g.queue<string>(async (k) => (await statement([k]))[0], statement);
  const completions = g.queue<string>(async (k) => (await statement([k]))[0], statement);
  const all = [claims.submit("x", "x"), completions.submit("x", "x"), claims.submit("y", "y"), completions.submit("x", "x"), completions.submit("y", "y")];
  hold.open();
  assert.deepEqual(await Promise.all(all), [true, true, true, true, true]);
  assert.equal(overlaps, 0, "one key was written by two statements at once");
  assert.equal(g.inflight.size, 0, "keys stayed held after their statements answered");
});

test("a claim holds its event: two versions of one event never go in one batch", async () => {
  const g = new GroupCommit(256, 1);
  const batches: string[][] = [];
  const hold = gate();
  const q = g.queue<string>(async (k) => {
    batches.push([k]);
    await hold.wait;
    return true;
  }, async (ks) => {
    batches.push(ks);
    return ks.map(() => true);
  });
  const first = q.submit("e0/v1", "e0/v1", "e0");
  const rest = [q.submit("e1/v1", "e1/v1", "e1"), q.submit("e1/v2", "e1/v2", "e1"), q.submit("e2/v1", "e2/v1", "e2")];
  hold.open();
  await Promise.all([first, ...rest]);
  for (const b of batches) {
    const events = b.map((k) => k.split("/")[0]);
    assert.equal(new Set(events).size, events.length, `batch ${b} holds two claims of one event`);
  }
  assert.deepEqual(batches.flat().sort(), ["e0/v1", "e1/v1", "e1/v2", "e2/v1"]);
});

test("a batch the server refuses as a whole is sent again one request at a time; a lost connection fails its callers", async () => {
  const g = new GroupCommit(256, 1);
  const hold = gate();
  let singles = 0;
  let failBatch: Error = new pg.DatabaseError("invalid input syntax", 0, "error");
  const q = g.queue<string>(async (k) => {
    singles++;
    if (k === "first") await hold.wait;
    if (k === "bad") throw new Error(`${k} is bad`);
    return true;
  }, async () => {
    throw failBatch;
  });
  const first = q.submit("first", "first");
  const refused = [q.submit("good", "good"), q.submit("bad", "bad").catch((e: Error) => e.message)];
  hold.open();
  assert.deepEqual(await Promise.all([first, ...refused]), [true, true, "bad is bad"]);
  assert.equal(singles, 3);
  assert.equal(g.stats.fallbacks, 1);

  failBatch = new Error("Connection terminated unexpectedly");
  const again = gate();
  const blocker = q.submit("first", "first");
  void again;
  const lost = [q.submit("p", "p"), q.submit("q", "q")].map((p) => p.catch((e: Error) => e.message));
  assert.deepEqual(await Promise.all([blocker, ...lost]), [true, "Connection terminated unexpectedly", "Connection terminated unexpectedly"]);
  assert.equal(singles, 4, "a batch whose connection was lost was sent again row by row");
});

test("a batcher answers each caller with its own value, in order", async () => {
  const hold = gate();
  const sizes: number[] = [];
  const b = new Batcher<number, number>(async (xs) => {
    sizes.push(xs.length);
    if (sizes.length === 1) await hold.wait;
    return xs.map((x) => x * 10);
  }, 256, 1);
  const first = b.get(1);
  const rest = [2, 3, 4].map((x) => b.get(x));
  hold.open();
  assert.deepEqual(await Promise.all([first, ...rest]), [10, 20, 30, 40]);
  assert.deepEqual(sizes, [1, 3]);
  assert.equal(b.statements, 2);
  assert.equal(b.calls, 4);
});
