// SHE's client: the server's integers (noise ratio numerator R and report bound, from
// sklearn_ldp.mechanisms.oracles.histogram_encoding) and each coordinate's law, the two-sided
// geometric P(z) = (1 - r) / (1 + r) r^|z| around the one-hot entry, by a chi-square test at
// p > 1e-6 (THE's law is in the laws fixture with the other unary encodings).
import assert from "node:assert/strict";
import { test } from "node:test";
import { HISTOGRAM_ENCODING_KINDS } from "../src/histogram_encoding.js";
import { Randomizer } from "../src/index.js";
import { chiSquareTest } from "./stats.js";

const DRAWS = Number(process.env.LDP_JS_DRAWS ?? 100000) / 5;
const spec = (epsilon) => ({ version: 1, mechanism: "she", epsilon, n_inputs: 3, params: {} });

test("SHE derives the server's noise ratio and report bound", () => {
  // The server's SummationHistogramEncoding(3, eps).ratio_numerator and .report_bound.
  for (const [epsilon, R, bound] of [[0.5, 816632n, 32767n], [1.0, 635994n, 32767n],
    [4.0, 141910n, 127n], [0.01, 1043347n, 32767n]]) {
    const [, privatize] = HISTOGRAM_ENCODING_KINDS.she(spec(epsilon));
    assert.equal(privatize.ratioNumerator, R);
    assert.equal(privatize.bound, bound);
  }
});

test("SHE coordinates follow the two-sided geometric around the one-hot entry", () => {
  const randomizer = new Randomizer(spec(1.0));
  const r = 635994 / 2 ** 20;
  const support = 40;
  const counts = [0, 1, 2].map(() => new Array(2 * support + 2).fill(0));
  for (let i = 0; i < DRAWS; i++) {
    const row = randomizer.privatize(1);
    row.forEach((value, j) => {
      const z = value - (j === 1 ? 1 : 0);
      const slot = Math.abs(z) <= support ? z + support : 2 * support + 1;
      counts[j][slot] += 1;
    });
  }
  const probabilities = [];
  for (let z = -support; z <= support; z++) probabilities.push((1 - r) / (1 + r) * r ** Math.abs(z));
  probabilities.push(1 - probabilities.reduce((a, b) => a + b, 0));
  for (const observed of counts) {
    assert.ok(chiSquareTest(observed, probabilities, DRAWS).pValue > 1e-6);
  }
});

test("THE refuses lattices outside the server's", () => {
  for (const params of [{ scale: 0, threshold: 0 }, { scale: 17, threshold: 0 },
    { scale: 2, threshold: 4 }, { scale: 2 }, { scale: 2, threshold: 1, extra: 1 }]) {
    assert.throws(() => HISTOGRAM_ENCODING_KINDS.the({ version: 1, mechanism: "the",
      epsilon: 1.0, n_inputs: 4, params }));
  }
});
