// Itemset records (SVSM's itemset round): the candidates a set contains, refusals naming the
// bad item (never truncated or dropped), reports in the server's output range (their law is in
// the laws fixture, hostile specifications in the hostile fixture).
import assert from "node:assert/strict";
import { test } from "node:test";
import { Randomizer, ValueError } from "../src/index.js";
import { fixture } from "./fixtures.js";

const specOf = (name) => fixture("laws").find((law) => law.name === name).spec;
// Items mail, maps, chat, news, games; cap 3; candidates [mail, maps], [mail, chat],
// [maps, chat], [mail, maps, chat]; pad length 2.
const itemsets = () => Randomizer.fromJSON(specOf("itemsets_grr_0"));

test("itemsets lists the candidates a set contains and reports one", () => {
  const randomizer = itemsets();
  assert.equal(randomizer.nInputs, 4);
  assert.deepEqual(randomizer.encode(["chat", "maps", "mail"]), [0, 1, 2, 3]);
  assert.deepEqual(randomizer.encode(new Set(["maps", "chat"])), [2]);
  assert.deepEqual(randomizer.encode(["news"]), []);
  for (const record of [[], ["mail", "maps"], new Set(["games", "chat"])]) {
    const report = randomizer.privatize(record);
    assert.ok(Number.isInteger(report) && report >= 0 && report < 6, `${report}`);
  }
});

test("itemsets refuses bad records, naming the item", () => {
  const refusals = [[["mail", "tetris"], /the item 'tetris' is not among the declared items/],
    [["mail", "mail"], /the item 'mail' is listed twice/],
    [["mail", "maps", "chat", "news"], /holds 4 items, more than max_set_size=3/],
    [[0], /the item 0 is not among/], ["mail", /a set-valued record is a set or list/],
    [null, /a set-valued record/]];
  const randomizer = itemsets();
  for (const [record, message] of refusals) {
    assert.throws(() => randomizer.privatize(record), (error) =>
      error instanceof ValueError && message.test(error.message));
  }
});

test("itemsets refuses item labels that are no JSON scalars", () => {
  const spec = JSON.parse(specOf("itemsets_grr_0"));
  assert.throws(() => new Randomizer({ ...spec, params: { ...spec.params,
    items: [...spec.params.items, ["x"]] } }), /must be strings, numbers, booleans or null/);
});
