// The chi-square helper itself, against known quantiles (so a law test cannot pass vacuously).
import assert from "node:assert/strict";
import { test } from "node:test";
import { chiSquareSurvival, chiSquareTest } from "./stats.js";

test("chi-square survival matches known quantiles", () => {
  // Upper 5% and 0.1% points of chi-square with 1, 10 and 100 degrees of freedom.
  const cases = [[3.841458820694124, 1, 0.05], [18.307038053275146, 10, 0.05],
    [124.34211340400407, 100, 0.05], [10.827566170662733, 1, 0.001],
    [29.588298445074457, 10, 0.001]];
  for (const [x, df, p] of cases) {
    assert.ok(Math.abs(chiSquareSurvival(x, df) - p) < 1e-9 * Math.max(1, 1 / p) * p + 1e-12,
      `Q(${x}; ${df}) = ${chiSquareSurvival(x, df)}, expected ${p}`);
  }
});

test("chi-square test rejects a wrong law", () => {
  const { pValue } = chiSquareTest([6000, 4000], [0.5, 0.5], 10000);
  assert.ok(pValue < 1e-6);
  const fair = chiSquareTest([5030, 4970], [0.5, 0.5], 10000);
  assert.ok(fair.pValue > 0.1);
});
