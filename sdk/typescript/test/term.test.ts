import { strict as assert } from "node:assert";
import { test } from "node:test";

import { termReasonRead } from "../src/term.js";

// The Go SDK's cases (consumer/term_internal_test.go): a server before 2.10.4 ignores a term with
// a reason, and an unknown version is taken for such a server.
test("a term carries its reason only to a server that reads it (2.10.4 and later)", () => {
  const cases: Record<string, boolean> = {
    "2.9.10": false, "2.9.25": false, "2.10.3": false, "": false, garbage: false, "2.10": false,
    "2.10.4": true, "2.10.29": true, "2.11.0": true, "v2.12.1": true, "2.15.2": true, "3.0.0": true,
    "2.11.0-RC.1": true, "2.10.3-beta": false,
  };
  for (const [version, want] of Object.entries(cases)) assert.equal(termReasonRead(version), want, version);
  assert.equal(termReasonRead(undefined), false);
});
