import { strict as assert } from "node:assert";
import { test } from "node:test";

import { Effects, NotExecutedError } from "../src/consumer.js";

// Each call is marked started before it is made; a suppressed one (shadow, write-forbidden) is
// recorded and never made; a call that failed with proof it did not run is not counted.
test("a call is marked started before it runs, and counted only when it may have happened", async () => {
  const order: string[] = [];
  const fx = new Effects(false, async (n) => {
    order.push(`started ${n}`);
  });
  await fx.call("payments.charge", "payments-api", async () => {
    order.push("charge");
    return "ch_1";
  });
  await assert.rejects(
    fx.call("email.receipt", "mailer", async () => {
      throw new NotExecutedError("connection refused");
    }),
    NotExecutedError,
  );
  assert.deepEqual(order, ["started 1", "charge", "started 2"]);
  assert.equal(fx.made, 1);
  assert.equal(fx.unknown, undefined);
  assert.deepEqual(fx.recorded, [{ kind: "payments.charge", target: "payments-api", ref: "ch_1" }]);
});

test("a call that fails without proof it did not run leaves the outcome unknown", async () => {
  const fx = new Effects(false, async () => undefined);
  await assert.rejects(fx.call("payments.charge", "payments-api", async () => {
    throw new Error("timeout");
  }));
  assert.equal(fx.made, 1);
  assert.match(String(fx.unknown), /timeout/);
});

test("a suppressed call is recorded, never made, never marked", async () => {
  let marked = 0;
  let made = 0;
  const fx = new Effects(true, async () => {
    marked++;
  });
  const ref = await fx.call("payments.charge", "payments-api", async () => {
    made++;
    return "ch_1";
  });
  assert.equal(ref, "");
  assert.equal(made + marked + fx.made, 0);
  assert.deepEqual(fx.recorded, [{ kind: "payments.charge", target: "payments-api", suppressed: true }]);
});

test("a call whose start cannot be marked is not made", async () => {
  let made = 0;
  const fx = new Effects(false, async () => {
    throw new Error("the lease is no longer live");
  });
  await assert.rejects(fx.call("payments.charge", "payments-api", async () => {
    made++;
    return "ch_1";
  }));
  assert.equal(made, 0);
  assert.equal(fx.made, 0);
});
