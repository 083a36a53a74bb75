// The law of the client's reports against the server's exact law (mechanism.exact_law):
// every report is one of the law's outputs, and a chi-square test of N reports against the
// integer weights passes at p > 0.001. The uniform bytes come from a seeded stream (AES-128
// in counter mode keyed by the case's name, seededSource), so every run draws the same
// reports: a case that fails fails every time, and is a bug of the client (or of its law),
// not bad luck. LDP_JS_SEED changes the seeds (to look at other draws).
import assert from "node:assert/strict";
import { test } from "node:test";
import { MemoryStorage, Randomizer, reportToJSON } from "../src/index.js";
import { fixture } from "./fixtures.js";
import { chiSquareTest, probabilities, seededSource } from "./stats.js";

const DRAWS = Number(process.env.LDP_JS_DRAWS ?? 100000);
const SEED = process.env.LDP_JS_SEED ?? "0";
const P_THRESHOLD = 0.001;

for (const law of fixture("laws")) {
  test(`law of ${law.name} matches the server's exact law`, () => {
    const randomSource = seededSource(`${SEED}:${law.name}`);
    const randomizer = Randomizer.fromJSON(law.spec,
      law.memo ? { state: new MemoryStorage(), randomSource } : { randomSource });
    // Numeric outputs are grid values: keyed by the double itself (the server computes them
    // with the same float64 operations, so equal reports are equal doubles).
    const keyOf = law.numeric ? (report) => String(report) : reportToJSON;
    const index = new Map(law.outputs.map((output, i) => [law.numeric ? String(output) : output,
      i]));
    const counts = new Array(law.outputs.length).fill(0);
    // Local hashing: the law given the seed (the seed itself is 64 uniform bits).
    // The memoizing kinds: the law over a random secret, a fresh device for every report.
    const freshDevice = { secret: (rng) => new Uint8Array(16).map(() => rng.byte()) };
    const draw = law.memo
      ? () => randomizer._privatizeCell(law.value, randomizer._rng, freshDevice)
      : law.seed === undefined
        ? () => randomizer.privatize(law.value)
        : () => randomizer._privatizeCell.reportGivenSeed(law.value, BigInt(law.seed),
          randomizer._rng);
    for (let i = 0; i < DRAWS; i++) {
      const key = keyOf(draw());
      const at = index.get(key);
      if (at === undefined) assert.fail(`report ${key} is not an output of the server's law`);
      counts[at] += 1;
    }
    const { statistic, df, pValue } = chiSquareTest(counts, probabilities(law.weights, law.total),
      DRAWS);
    assert.ok(pValue > P_THRESHOLD,
      `chi-square ${statistic.toFixed(1)} on ${df} df, p = ${pValue} <= ${P_THRESHOLD}`);
  });
}

test("local hashing draws its seed over all 64 bits", () => {
  const randomizer = Randomizer.fromJSON(
    '{"version": 1, "mechanism": "olh", "epsilon": 1.0, "n_inputs": 6, "params": {"n_buckets": 4}}');
  let high = 0;
  for (let i = 0; i < 2000; i++) {
    const [seed, bucket] = randomizer.privatize(3);
    assert.equal(typeof seed, "bigint");
    assert.ok(seed >= 0n && seed < 2n ** 64n && bucket >= 0 && bucket < 4);
    if (seed >= 2n ** 63n) high += 1;
  }
  // Binomial(2000, 1/2): 6 standard deviations either side.
  assert.ok(Math.abs(high - 1000) < 6 * Math.sqrt(500), `top bit set ${high} times in 2000`);
});
