import { strict as assert } from "node:assert";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

import { tombstoneKey } from "../src/tombstone.js";

// The vectors Go and SQL reproduce (ledger: TestTombstoneKeysMatchTheSharedVectorsInGoAndSQL).
const here = dirname(fileURLToPath(import.meta.url));
const file = join(here, "..", "..", "..", "..", "ledger", "testdata", "tombstone-keys.json");
const vectors: { consumer: string; eventId: string; key: string }[] = JSON.parse(readFileSync(file, "utf8")).vectors;

test("compact tombstone keys match the shared vectors", () => {
  assert.ok(vectors.length > 0);
  for (const v of vectors) {
    assert.equal(tombstoneKey(v.consumer, v.eventId).toString(), v.key, `${v.consumer} ${JSON.stringify(v.eventId)}`);
  }
});
