// Set-valued (set_items) and key-value (pckv_grr) records: what a record may be, refusals
// naming the bad item, pair or value (never truncated, dropped or clipped), and reports in the
// server's output range (their law is in the laws fixture).
import assert from "node:assert/strict";
import { test } from "node:test";
import { Randomizer, ValueError, reportToJSON } from "../src/index.js";
import { fixture } from "./fixtures.js";

const specOf = (name) => fixture("laws").find((law) => law.name === name).spec;
const items = () => Randomizer.fromJSON(specOf("set_items_grr_short")); // 6 items, L 3, cap 4
const labelled = () => Randomizer.fromJSON(specOf("set_items_olh_labels_seed0")); // "a".."f"
const pckv = () => Randomizer.fromJSON(specOf("pckv_grr_short")); // 4 keys, L 2, cap 3, 4 steps

test("set_items takes arrays and Sets of item codes or labels", () => {
  const randomizer = items();
  assert.equal(randomizer.nInputs, 6);
  assert.deepEqual(randomizer.encode([5, 0, 3]), [0, 3, 5]);
  for (const record of [[], [1, 2], new Set([0, 5, 3, 4])]) {
    const report = randomizer.privatize(record);
    assert.ok(Number.isInteger(report) && report >= 0 && report < 9, `${report}`);
  }
  const withLabels = labelled();
  assert.deepEqual(withLabels.encode(new Set(["f", "a"])), [0, 5]);
  const [seed, bucket] = withLabels.privatize(["b", "e"]);
  assert.ok(typeof seed === "bigint" && bucket >= 0 && bucket < 4);
  assert.match(reportToJSON([seed, bucket]), /^\[\d+,\d\]$/);
});

test("set_items refuses bad records, naming the item", () => {
  const refusals = [[[6], /the item 6 is not an item code in \[0, 6\)/],
    [[-1], /the item -1/], [[1.5], /the item 1.5/], [[true], /the item True/],
    [["1"], /the item '1'/], [[1, 2, 1], /the item 1 is listed twice/],
    [[0, 1, 2, 3, 4], /holds 5 items, more than max_set_size=4 \(never truncated\)/],
    ["01", /a set-valued record is a set or list of items/],
    [3, /a set-valued record/], [null, /a set-valued record/], [{ 0: 1 }, /a set-valued/]];
  const randomizer = items();
  for (const [record, message] of refusals) {
    assert.throws(() => randomizer.privatize(record), (error) =>
      error instanceof ValueError && message.test(error.message));
  }
  const withLabels = labelled();
  assert.throws(() => withLabels.privatize(["a", "z"]), /the item 'z' is not among the declared/);
  assert.throws(() => withLabels.privatize([0]), /the item 0 is not among the declared/);
  assert.throws(() => withLabels.privatize(["c", "c"]), /the item 'c' is listed twice/);
});

test("set_items refuses labels this client cannot tell apart", () => {
  const spec = JSON.parse(specOf("set_items_grr_short"));
  for (const labels of [[1, 2, 3, 4, 5, 1.0], ["a", "b", "c", "d", "e", ["f"]]]) {
    assert.throws(() => new Randomizer({ ...spec, params: { ...spec.params, items: labels } }),
      /items of the 'set_items' specification must be 6 distinct/);
  }
  // The same text in different JSON types are different labels, as in Python.
  const mixed = new Randomizer({ ...spec, params: { ...spec.params,
    items: [1, "1", true, "true", null, "null"] } });
  assert.deepEqual(mixed.encode(["1", null, true]), [1, 2, 4]);
});

test("pckv_grr takes arrays of [key, value] pairs and Maps", () => {
  const randomizer = pckv();
  assert.deepEqual(randomizer.encode([[3, -1], [0, 0.25]]), [[0, 1], [3, -4]]);
  assert.deepEqual(randomizer.encode(new Map([[2, 0.5]])), [[2, 2]]);
  for (const record of [[], [[1, 0.5]], new Map([[0, 1], [1, -1], [3, 0]])]) {
    const report = randomizer.privatize(record);
    // Outputs 2 key + sign over the n_inputs + pad_length = 6 keys.
    assert.ok(Number.isInteger(report) && report >= 0 && report < 12, `${report}`);
  }
});

test("pckv_grr refuses bad records, naming the key or the value (never clipped)", () => {
  const refusals = [[[[4, 0.5]], /the key 4 is not a key in \[0, 4\)/],
    [[[-1, 0.5]], /the key -1/], [[[1.5, 0.5]], /the key 1.5/], [[["1", 0.5]], /the key '1'/],
    [[[1, 0.5], [1, 0.25]], /the key 1 is listed twice/],
    [[[1, 1.5]], /the value 1.5 of key 1 is not a number in \[-1, 1\]/],
    [[[1, NaN]], /the value nan of key 1/], [[[1, Infinity]], /the value inf/],
    [[[1, "0.5"]], /the value '0.5' of key 1/], [[[1, true]], /the value True/],
    [[[1, null]], /the value None/],
    [[[1, 0.3]], /the value 0.3 of key 1 is not on the lattice j \/ 4/],
    [[[0, 0], [1, 0], [2, 0], [3, 0]], /holds 4 pairs, more than max_set_size=3/],
    [[[1]], /a pair is \[key, value\], got \[1\]/], [[[1, 0.5, 2]], /a pair is/],
    [[1, 2], /a pair is/], [{ 1: 0.5 }, /a key-value record is a Map/],
    ["ab", /a key-value record/], [null, /a key-value record/]];
  const randomizer = pckv();
  for (const [record, message] of refusals) {
    assert.throws(() => randomizer.privatize(record), (error) =>
      error instanceof ValueError && message.test(error.message));
  }
});

test("set-valued kinds take no categories and keep no state", () => {
  assert.throws(() => Randomizer.fromJSON(specOf("pckv_grr_short"), { categories: { k: [1] } }),
    /takes no categories/);
  assert.throws(() => Randomizer.fromJSON(specOf("set_items_grr_short"),
    { state: { get: () => null, set: () => {} } }), /keeps no client state/);
});

test("random records are reported in range or refused with a ValueError", () => {
  // Items, keys and values of every JSON type and edge, in containers of every shape.
  const atoms = [0, 1, 3, 5, 6, -1, 0.5, -0.25, 1.5, -0, NaN, Infinity, 2 ** 53, 1e-300, null,
    true, "", "a", "f", "1", [], [1], [1, 0.5], [7, 0], [2, -1], {}, 2n];
  let state = 20261129;
  const pick = (n) => {
    state = (state * 1103515245 + 12345) % 2147483648;
    return state % n;
  };
  const record = () => {
    const entries = Array.from({ length: pick(6) }, () => atoms[pick(atoms.length)]);
    const pairs = new Map(entries.filter(Array.isArray).map((e) => [e[0], e[1]]));
    return [entries, new Set(entries), pairs, atoms[pick(atoms.length)]][pick(4)];
  };
  for (const [make, outputs] of [[items, 9], [labelled, null], [pckv, 12]]) {
    const randomizer = make();
    let accepted = 0;
    for (let i = 0; i < 2000; i++) {
      let report;
      try {
        report = randomizer.privatize(record());
      } catch (error) {
        assert.ok(error instanceof ValueError, error.stack);
        continue;
      }
      accepted += 1;
      if (outputs === null) assert.ok(report[1] >= 0 && report[1] < 4);
      else assert.ok(Number.isInteger(report) && report >= 0 && report < outputs);
    }
    assert.ok(accepted > 20, `only ${accepted} of 2000 random records accepted`);
  }
});

test("pckv_grr weights beyond 2^53 are read exactly from the text, refused once rounded", () => {
  const text = specOf("pckv_grr_short");
  assert.equal(Randomizer.fromJSON(text).kind, "pckv_grr");
  assert.throws(() => new Randomizer(JSON.parse(text)),
    /weights of the 'pckv_grr' .* exact only when the JSON text is read by Randomizer.fromJSON/);
});
