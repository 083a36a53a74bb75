// Histogram encoding: SHE (noisy one-hot integers) and THE (their thresholded bits) -- the
// Python client's histogram_encoding.py, with the server's integers: the noise ratio
// r = R / 2^20 (the least R with (2^20 / R)^(2 s) <= e^eps), the two-sided geometric drawn from
// 64-bit words compared with integers, the report bound, and THE's exact p, q rounded as unary
// encoding rounds them.

import * as D from "./decimal.js";
import { ValueError, repr } from "./errors.js";
import { within } from "./exact.js";
import { dyadicUnary, makeUnaryFromNumerators } from "./oracles.js";
import { checkInt, common } from "./spec.js";

const NOISE_BITS = 20n;
const NOISE_BLOCK = 3n;
const TAIL_BITS = 128n;
const THE_MAX_SCALE = 16;
const ONE20 = 1n << NOISE_BITS;
// Largest values of int8 and int16 (the report types), then int32's.
const BOUNDS = [127n, 32767n];
const INT32_MAX = 2n ** 31n - 1n;

/** The server's noise_ratio_numerator: the least R with (2^20 / R)^(2 s) <= e^eps. */
export function noiseRatioNumerator(epsilon, scale = 1) {
  // e^(-eps / (2 s)) as 1 / e^(eps / (2 s)); the start is two below the nominal ceiling and the
  // exact integer check decides, so the last digit of the decimal cannot change R.
  const x = epsilon / (2 * scale);
  const nominal = D.divide(D.fromInt(ONE20), D.exp(x));
  let R = D.toIntegral(nominal, "ceiling") - 2n;
  if (R < 1n) R = 1n;
  const power = BigInt(2 * scale);
  while (!within(ONE20 ** power, R ** power, epsilon)) R += 1n;
  if (R >= ONE20) {
    throw new ValueError(`epsilon=${repr(epsilon)} is too small for histogram encoding on a ` +
      `lattice of ${scale} steps; use epsilon >= 1e-5.`);
  }
  return R;
}

/** The largest value m of the server's report type (int8, int16 when 2 R^m <= 2^(20 m - 128)). */
export function reportBound(R) {
  for (const m of BOUNDS) {
    if (2n * R ** m <= 2n ** (NOISE_BITS * m - TAIL_BITS)) return m;
  }
  return INT32_MAX;
}

/** One draw of P(z) ~ r^|z|: three geometric steps per 64-bit word (its top 60 bits below
 * R^j 2^(20 (3 - j))), the sign from the first word's lowest bit, -0 redrawn. */
function twoSidedGeometric(rng, thresholds) {
  for (;;) {
    let word = rng.bitsBigInt(64);
    const negative = (word & 1n) === 1n;
    let magnitude = 0;
    for (;;) {
      const bits = word >> 4n;
      let steps = 0;
      for (const t of thresholds) if (bits < t) steps += 1;
      magnitude += steps;
      if (steps < Number(NOISE_BLOCK)) break;
      word = rng.bitsBigInt(64);
    }
    if (!(negative && magnitude === 0)) return negative ? -magnitude : magnitude;
  }
}

function she(spec) {
  const [n, epsilon] = common(spec);
  const R = noiseRatioNumerator(epsilon);
  const bound = reportBound(R);
  const thresholds = [1n, 2n, 3n].map((j) => (R ** j) << (NOISE_BITS * (NOISE_BLOCK - j)));
  const privatize = (cell, rng) => {
    const row = [];
    for (let j = 0; j < n; j++) row.push(twoSidedGeometric(rng, thresholds) + (j === cell ? 1 : 0));
    if (row.some((value) => BigInt(Math.abs(value)) > bound)) {
      // Probability below 2^-128 a coordinate: an outcome of its own, never clipped.
      throw new RangeError(`a 'she' report has a coordinate beyond +-${bound}; no report is sent.`);
    }
    return row;
  };
  privatize.ratioNumerator = R; // for the tests
  privatize.bound = bound;
  return [n, privatize];
}

/** P(Z >= g) of the two-sided geometric of ratio R / 2^20, as [numerator, denominator]. */
function tail(R, g) {
  // r^g / (1 + r) = R^g / (2^(20 (g - 1)) (2^20 + R)) for g >= 1, else 1 - r^(1-g) / (1 + r).
  if (g >= 1) {
    return [R ** BigInt(g), ONE20 ** BigInt(g - 1) * (ONE20 + R)];
  }
  const k = BigInt(1 - g);
  const den = ONE20 ** (k - 1n) * (ONE20 + R);
  return [den - R ** k, den];
}

function the(spec) {
  const [n, epsilon, params] = common(spec, ["scale", "threshold"]);
  const scale = checkInt(params.scale, "scale");
  const threshold = checkInt(params.threshold, "threshold", 0);
  if (scale > THE_MAX_SCALE || threshold >= 2 * scale) {
    throw new ValueError(`the 'the' specification needs 1 <= scale <= ${THE_MAX_SCALE} and ` +
      `0 <= threshold < 2 scale, got scale=${scale}, threshold=${threshold}.`);
  }
  const R = noiseRatioNumerator(epsilon, scale);
  const [p, q] = [tail(R, threshold + 1 - scale), tail(R, threshold + 1)].map(
    ([num, den]) => D.divide(D.fromInt(num), D.fromInt(den)));
  const numerators = dyadicUnary(p, q, "the", epsilon);
  return [n, makeUnaryFromNumerators("the", n, numerators)];
}

/** The histogram-encoding kinds by name. */
export const HISTOGRAM_ENCODING_KINDS = { she, the };
