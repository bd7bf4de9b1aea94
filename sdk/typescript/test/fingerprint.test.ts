import { strict as assert } from "node:assert";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

import { InvalidOptionsError, v1, v2 } from "../src/fingerprint.js";

// The vectors the Go SDK reproduces (go test ./fingerprint -run TestVectors), read from the
// repository, not copied: both SDKs test against the one file.
const here = dirname(fileURLToPath(import.meta.url));
const vectorsPath = join(here, "..", "..", "..", "..", "fingerprint", "testdata", "vectors.json");

interface Vector {
  name: string;
  payload?: string;
  payloadHex?: string;
  options?: { exclude?: string[]; sets?: string[] };
  optionsEncoded?: string;
  algorithm: string;
  canonical?: string;
  canonicalHex?: string;
  hash: string;
}

const vectors: Vector[] = JSON.parse(readFileSync(vectorsPath, "utf8")).vectors;

test("the shared vectors are there", () => {
  assert.ok(vectors.length >= 30, `${vectors.length} vectors in ${vectorsPath}`);
});

for (const vec of vectors) {
  test(vec.name, () => {
    const payload = vec.payloadHex !== undefined ? Buffer.from(vec.payloadHex, "hex") : Buffer.from(vec.payload ?? "", "utf8");
    const h = vec.options ? v2(vec.options) : v1();
    assert.equal(h.algorithm, vec.algorithm);
    if (vec.optionsEncoded !== undefined) assert.equal(h.optionsEncoded, vec.optionsEncoded);
    const want = vec.canonicalHex !== undefined ? Buffer.from(vec.canonicalHex, "hex") : Buffer.from(vec.canonical ?? "", "utf8");
    assert.equal(Buffer.from(h.canonical(payload)).toString("hex"), want.toString("hex"), "canonical bytes");
    assert.equal(h.sum(payload), vec.hash);
  });
}

// encoding/json decodes 10,000 levels of nesting and refuses the 10,001st; the parser and encoder
// keep no call stack per level, so the limit is the same here.
test("nesting as deep as encoding/json allows is canonical; one level more is raw bytes", () => {
  for (const [depth, canonical] of [[10_000, true], [10_001, false]] as const) {
    const payload = Buffer.from("[".repeat(depth) + " " + "]".repeat(depth));
    const got = Buffer.from(v2().canonical(payload)).toString();
    assert.equal(!got.includes(" "), canonical, `depth ${depth}`);
  }
});

test("an option pattern with an empty segment is refused", () => {
  assert.throws(() => v2({ exclude: ["a..b"] }), InvalidOptionsError);
});
