// The client's integers (two-weight laws, unary and subset numerators) equal the server's,
// for many epsilons: the 80-digit decimal decisions of ./src/decimal.js are the server's.
import assert from "node:assert/strict";
import { test } from "node:test";
import { Randomizer } from "../src/index.js";
import * as D from "../src/decimal.js";
import { fixture } from "./fixtures.js";

test("every oracle's integers equal the server's", () => {
  let compared = 0;
  for (const row of fixture("integers")) {
    if (row.error !== undefined) continue; // the server refuses this epsilon for this kind
    // Numeric kinds: the spec's grid holds the server's integers; loading compares them.
    const randomizer = Randomizer.fromJSON(row.spec);
    const privatize = randomizer._privatizeCell;
    if (row.weights === undefined && row.numerators === undefined) {
      compared += 1;
      continue;
    }
    const label = `${row.kind} at epsilon=${row.epsilon}`;
    if (row.weights) assert.deepEqual(privatize.weights.map(String), row.weights, label);
    else if (row.numerators.length === 2) {
      assert.deepEqual(privatize.numerators.map(String), row.numerators, label);
    } else assert.equal(String(privatize.numerator), row.numerators[0], label);
    compared += 1;
  }
  assert.ok(compared > 250, `only ${compared} rows compared`);
});

test("decimal arithmetic rounds like Python's 80-digit context", () => {
  // Decimal(1) / 3 and Context(prec=80).exp(Decimal(1)).
  const third = D.divide(D.fromInt(1), D.fromInt(3));
  assert.equal(third.c.toString(), "3".repeat(80));
  assert.equal(third.e, -80);
  const e = D.exp(1);
  assert.equal(e.c.toString(),
    "27182818284590452353602874713526624977572470936999595749669676277240766303535476");
  // Ties (an 81-digit value ending in 5) round to the even 80th digit.
  const one = D.fromInt(1);
  assert.equal(D.multiply({ c: 10n ** 80n + 5n, e: 0 }, one).c, 10n ** 79n);
  assert.equal(D.multiply({ c: 10n ** 80n + 15n, e: 0 }, one).c, 10n ** 79n + 2n);
  assert.equal(D.toIntegral(D.sqrt(D.fromInt(2)), "floor"), 1n);
  assert.equal(D.sqrt(D.fromInt(2)).c.toString(),
    "14142135623730950488016887242096980785696718753769480731766797379907324784621070");
  // A double is taken exactly: 0.1 is 0.1000000000000000055511151231257827021181583404541015625.
  const tenth = { c: 1000000000000000055511151231257827021181583404541015625n, e: -55 };
  assert.ok(D.lessEqual(D.fromFloat(0.1), tenth) && D.lessEqual(tenth, D.fromFloat(0.1)));
});
