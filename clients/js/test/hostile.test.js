// Hostile specifications are refused as the Python client refuses them: a ValueError naming
// the field, with the Python client's message (up to how each language prints a float, and the
// list of kinds each client knows).
import assert from "node:assert/strict";
import { test } from "node:test";
import { Randomizer, ValueError } from "../src/index.js";
import { fixture, jsonText } from "./fixtures.js";

// Python prints the float 0.0 where JavaScript prints 0 (outside quoted strings).
function jsNumbers(message) {
  return message.replace(/(?<!['\d.])(-?\d+)\.0(?![\d'])/g, "$1");
}

for (const { field, spec, python_message: pythonMessage } of fixture("hostile")) {
  test(`refused, naming ${field}: ${jsonText(spec)}`, () => {
    assert.throws(() => new Randomizer(spec), (error) => {
      assert.ok(error instanceof ValueError, `${error.name}: ${error.message}`);
      assert.ok(error.message.includes(field), `${error.message} does not name ${field}`);
      if (field !== "mechanism" && field !== "unknown mechanism") {
        assert.equal(error.message, jsNumbers(pythonMessage));
      }
      return true;
    });
    // The same through the JSON text.
    assert.throws(() => Randomizer.fromJSON(jsonText(spec)), ValueError);
  });
}

test("text that is not JSON is refused", () => {
  assert.throws(() => Randomizer.fromJSON("{'version': 1"), /not valid JSON/);
  // JSON has no NaN or Infinity: a spec carrying them is not JSON.
  assert.throws(() => Randomizer.fromJSON(
    '{"version": 1, "mechanism": "oue", "epsilon": NaN, "n_inputs": 4}'), /not valid JSON/);
});

test("values outside the domain are refused, naming the value", () => {
  const randomizer = Randomizer.fromJSON(
    '{"version": 1, "mechanism": "oue", "epsilon": 1.0, "n_inputs": 4, "params": {}}');
  for (const value of [-1, 4, 1.5, "2", null, true, NaN, 2n]) {
    assert.throws(() => randomizer.privatize(value), /must be a cell index/);
  }
});

test("categories encode records like the server's Domain and refuse unknown values", () => {
  const spec = '{"version": 1, "mechanism": "randomized_response", "epsilon": 1.0, ' +
    '"n_inputs": 6, "params": {}}';
  const categories = { age: ["<30", "30-50", ">50"], smoker: ["no", "yes"] };
  const randomizer = Randomizer.fromJSON(spec, { categories });
  assert.equal(randomizer.encode({ age: "30-50", smoker: "yes" }), 3);
  assert.equal(randomizer.encode([">50", "no"]), 4);
  const report = randomizer.privatize({ age: "30-50", smoker: "yes" });
  assert.ok(Number.isInteger(report) && report >= 0 && report < 6);
  assert.throws(() => randomizer.encode({ age: "30-50" }), /no value for column\(s\) \['smoker'\]/);
  assert.throws(() => randomizer.encode({ age: "old", smoker: "no" }), /column 'age' has the value 'old'/);
  assert.throws(() => randomizer.encode({ age: null, smoker: "no" }), /missing value/);
  assert.throws(() => Randomizer.fromJSON(spec, { categories: { age: ["a", "b"] } }),
    /describe 2 cells/);
  assert.throws(() => Randomizer.fromJSON(spec, { categories: { age: ["a", "a", "b"],
    smoker: ["x", "y"] } }), /duplicate category 'a'/);
});

test("numeric values outside the bounds are refused, never clipped", () => {
  const { spec } = fixture("laws").find((law) => law.name === "piecewise_eps2_grid32");
  const randomizer = Randomizer.fromJSON(spec); // bounds [-1, 1]
  assert.equal(typeof randomizer.privatize(0.5), "number");
  for (const value of [-1.01, 1.5, NaN, Infinity, "0.5", null, [0.5]]) {
    assert.throws(() => randomizer.privatize(value), /the value must/);
  }
  assert.throws(() => Randomizer.fromJSON(spec, { categories: { x: ["a"] } }),
    /takes no categories/);
});

test("packed-bit kinds refuse domains too large for a device, naming n_inputs", () => {
  for (const kind of ["oue", "rappor"]) {
    assert.throws(() => new Randomizer({ version: 1, mechanism: kind, epsilon: 1.0,
      n_inputs: 2 ** 24 + 1, params: {} }), /n_inputs of the '(oue|rappor)' specification/);
  }
  assert.throws(() => new Randomizer({ version: 1, mechanism: "subset_selection", epsilon: 1.0,
    n_inputs: 2 ** 30, params: { subset_size: 4 } }), /n_inputs of the 'subset_selection'/);
});

test("heavy-hitter values the server's encoding cannot hold are refused", () => {
  const spec = { version: 2, mechanism: "prefix_heavy_hitters", bit_length: 16, epsilon: 2.0,
    protocol: "pem", n_candidates: 4, extension_bits: 2 };
  const randomizer = new Randomizer(spec);
  assert.equal(randomizer.privatize("ab").length, 3);
  assert.equal(randomizer.privatize(65535n).length, 3);
  const refusals = [[65536, /not in \[0, 2\^16\)/], [-1, /not in/], ["abc", /takes 3 bytes/],
    ["a\0", /NUL character/], ["\ud800", /lone surrogate/], [1.5, /integer or a string/],
    [null, /integer or a string/]];
  for (const [value, message] of refusals) {
    assert.throws(() => randomizer.privatize(value), message);
  }
  assert.throws(() => new Randomizer({ ...spec, bit_length: 12 }).privatize("a"),
    /multiple of 8/);
});

test("multi_attribute takes category codes, or records with its columns' categories", () => {
  const spec = { version: 1, mechanism: "multi_attribute", epsilon: 1.0, shape: [3, 2],
    params: { protocol: "smp", oracle: "grr", neighbourhood: "record" } };
  const plain = new Randomizer(spec);
  assert.deepEqual(plain.encode([2, 1]), [2, 1]);
  assert.equal(plain.privatize([2, 1]).length, 2);
  for (const record of [[3, 0], [0], [0, 1.5], "a", [null, 0]]) {
    assert.throws(() => plain.privatize(record), ValueError);
  }
  const categories = { age: ["<30", "30-50", ">50"], smoker: ["no", "yes"] };
  const withColumns = new Randomizer(spec, { categories });
  assert.deepEqual(withColumns.columns, ["age", "smoker"]);
  assert.deepEqual(withColumns.encode({ age: ">50", smoker: "no" }), [2, 0]);
  assert.equal(withColumns.privatize({ age: ">50", smoker: "no" }).length, 2);
  assert.throws(() => withColumns.privatize({ age: "old", smoker: "no" }), /'old'/);
  assert.throws(() => new Randomizer(spec, { categories: { age: ["a", "b"], smoker: ["n", "y"] } }),
    /\[2, 2\] values per column but the specification declares \[3, 2\]/);
});

test("the Python client's Gaussian kinds are refused, naming that client", () => {
  for (const mechanism of ["gaussian", "gaussian_pure"]) {
    assert.throws(() => new Randomizer({ version: 2, mechanism, epsilon: 1.0 }),
      /is randomized by the Python client \(sklearn_ldp.deploy.client\)/);
  }
});

test("a declared max_string_bytes truncates longer strings as the server encodes them", () => {
  const spec = { version: 2, mechanism: "prefix_heavy_hitters", bit_length: 16, epsilon: 2.0,
    protocol: "pem", n_candidates: 4, extension_bits: 2, max_string_bytes: 4 };
  const randomizer = new Randomizer(spec);
  assert.equal(randomizer.privatize("abcd").length, 3);
  assert.throws(() => randomizer.privatize("abcde"), /declared maximum of 4 bytes/);
  assert.throws(() => new Randomizer({ ...spec, max_string_bytes: 1 }), /max_string_bytes/);
  assert.throws(() => new Randomizer({ ...spec, max_string_bytes: 4.5 }), /max_string_bytes/);
});

test("an epsilon too small to be meaningful is refused, as by the Python client", () => {
  assert.throws(() => new Randomizer({ version: 1, mechanism: "hadamard", epsilon: 1e-12,
    n_inputs: 10, params: {} }), /too small to be meaningful, got 1e-12/);
});
