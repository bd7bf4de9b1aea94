import { strict as assert } from "node:assert";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { BadKeyringError, Keyring, SealError, resultContext } from "../src/seal.js";

// The body the Go SDK sealed (seal/testdata/sealed-json.json): this SDK must open what Go seals,
// and the conformance kit opens what this SDK seals with Go's package.
const vector = JSON.parse(readFileSync(new URL("../../../../seal/testdata/sealed-json.json", import.meta.url), "utf8"));

test("a body the Go SDK sealed opens here, and only for its own row", () => {
  const kr = Keyring.parse(vector.keyring);
  const raw = JSON.stringify(vector.sealed);
  const plain = kr.openJSON(raw, resultContext(vector.consumer, vector.eventId, vector.effectVersion));
  assert.equal(plain.toString("utf8"), vector.plaintext);
  assert.throws(() => kr.openJSON(raw, resultContext(vector.consumer, vector.eventId, vector.effectVersion + 1)), SealError);
  assert.throws(() => kr.openJSON(raw, resultContext(vector.consumer, "evt-43", vector.effectVersion)), SealError);
});

test("a sealed body holds no plaintext, carries the newest key, and opens after the keyring rotates", () => {
  const kr = Keyring.parse(vector.keyring);
  const ctx = resultContext("billing", "evt-1", 1);
  const sealed = kr.sealJSON(vector.plaintext, ctx);
  assert.doesNotMatch(sealed, /order-42|charged/);
  assert.equal(JSON.parse(sealed).$sealed.keyId, "vectors-2026-12");
  const rotated = Keyring.parse(`${vector.keyring}new-3 ${Buffer.alloc(32, 9).toString("base64")}\n`);
  assert.equal(rotated.newestKeyId, "new-3");
  assert.equal(rotated.openJSON(sealed, ctx).toString("utf8"), vector.plaintext);
  const changed = JSON.parse(sealed);
  const box = Buffer.from(changed.$sealed.box, "base64");
  box[box.length - 1] ^= 1;
  changed.$sealed.box = box.toString("base64");
  assert.throws(() => kr.openJSON(JSON.stringify(changed), ctx), SealError);
});

test("a bad keyring names its line and never its secret", () => {
  assert.throws(() => Keyring.parse("k1 c2hvcnQ=\n"), (e: Error) => e instanceof BadKeyringError && /is 5 bytes, want 32/.test(e.message));
  assert.throws(() => Keyring.parse("# a comment\nno-space-here\n"), /line 2/);
  assert.throws(() => Keyring.parse("k1 not*base64\n"), (e: Error) => /line 1/.test(e.message) && !/not\*base64/.test(e.message));
  assert.throws(() => Keyring.parse(""), /no key/);
});
