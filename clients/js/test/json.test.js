// parseJSON reads what JSON.parse reads (the same values, the same refusals), except that
// integers beyond 2^53 come back exact as BigInts.
import assert from "node:assert/strict";
import { test } from "node:test";
import { parseJSON } from "../src/json.js";
import { fixture } from "./fixtures.js";

test("parseJSON agrees with JSON.parse on every safe document", () => {
  const texts = ['{"a": [1, -2.5e-3, 0, -0, 1E+2, true, false, null], "b": {"c": "x\\u00e9\\n"}}',
    "[]", "{}", '"\\ud83d\\ude00"', " 17 ", '{"__proto__": 1}', '{"a": 1, "a": 2}',
    // Not the specs with integers beyond 2^53 (hash seeds, the pckv kinds' 62-bit weights).
    ...fixture("laws").map((law) => law.spec).filter((text) => !text.includes("hash_seed") &&
      !text.includes('"mechanism": "pckv_'))];
  for (const text of texts) assert.deepEqual(parseJSON(text), JSON.parse(text), text);
});

test("parseJSON keeps 64-bit integers exact and refuses what JSON.parse refuses", () => {
  assert.equal(parseJSON("18446744073709551615"), 18446744073709551615n);
  assert.deepEqual(parseJSON("[9007199254740993, -9007199254740993, 9007199254740991]"),
    [9007199254740993n, -9007199254740993n, 9007199254740991]);
  for (const bad of ["", "{", "[1,]", '{"a" 1}', "01", "NaN", "Infinity", "1 2", '"\\x"',
    '{"a":1,}', "'a'", "[1] x", '"tab\there"', "+1", ".5", "1."]) {
    assert.throws(() => JSON.parse(bad), SyntaxError, `JSON.parse accepts ${bad}`);
    assert.throws(() => parseJSON(bad), SyntaxError, bad);
  }
});
