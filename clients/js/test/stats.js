// Chi-square goodness of fit for the law tests: the statistic, its p-value from the
// regularized upper incomplete gamma function, and expected counts from integer weights;
// and a seeded byte source, so that the law tests draw the same reports on every run.
import { createCipheriv, createHash } from "node:crypto";

// log Gamma(x) for x > 0 (Lanczos approximation, g = 7, 9 terms: ~15 digits).
const LANCZOS = [0.99999999999980993, 676.5203681218851, -1259.1392167224028,
  771.32342877765313, -176.61502916214059, 12.507343278686905, -0.13857109526572012,
  9.9843695780195716e-6, 1.5056327351493116e-7];

function logGamma(x) {
  if (x < 0.5) return Math.log(Math.PI / Math.sin(Math.PI * x)) - logGamma(1 - x);
  x -= 1;
  let sum = LANCZOS[0];
  for (let i = 1; i < 9; i++) sum += LANCZOS[i] / (x + i);
  const t = x + 7.5;
  return 0.5 * Math.log(2 * Math.PI) + (x + 0.5) * Math.log(t) - t + Math.log(sum);
}

/** Q(a, x) = Gamma(a, x) / Gamma(a): series below a + 1, continued fraction above. */
export function upperGammaQ(a, x) {
  if (x <= 0) return 1;
  const logPrefix = a * Math.log(x) - x - logGamma(a);
  if (x < a + 1) {
    let term = 1 / a;
    let sum = term;
    for (let n = 1; n < 10000 && Math.abs(term) > Math.abs(sum) * 1e-16; n++) {
      term *= x / (a + n);
      sum += term;
    }
    return 1 - sum * Math.exp(logPrefix);
  }
  // Modified Lentz evaluation of the continued fraction of Gamma(a, x).
  const tiny = 1e-300;
  let b = x + 1 - a;
  let c = 1 / tiny;
  let d = 1 / b;
  let h = d;
  for (let i = 1; i < 10000; i++) {
    const an = -i * (i - a);
    b += 2;
    d = an * d + b;
    if (Math.abs(d) < tiny) d = tiny;
    c = b + an / c;
    if (Math.abs(c) < tiny) c = tiny;
    d = 1 / d;
    const delta = d * c;
    h *= delta;
    if (Math.abs(delta - 1) < 1e-16) break;
  }
  return Math.exp(logPrefix) * h;
}

/** P(chi2_df >= statistic). */
export function chiSquareSurvival(statistic, df) {
  return upperGammaQ(df / 2, statistic / 2);
}

/**
 * Chi-square test of observed counts against probabilities (outputs of expected count
 * below 5 pooled into one cell). Returns {statistic, df, pValue}.
 */
export function chiSquareTest(observed, probabilities, draws) {
  let statistic = 0;
  let cells = 0;
  let pooledObserved = 0;
  let pooledExpected = 0;
  observed.forEach((count, i) => {
    const expected = probabilities[i] * draws;
    if (expected < 5) {
      pooledObserved += count;
      pooledExpected += expected;
      return;
    }
    statistic += (count - expected) ** 2 / expected;
    cells += 1;
  });
  if (pooledExpected > 0) {
    statistic += (pooledObserved - pooledExpected) ** 2 / pooledExpected;
    cells += 1;
  }
  const df = Math.max(1, cells - 1);
  return { statistic, df, pValue: chiSquareSurvival(statistic, df) };
}

/** Probabilities w / total of BigInt weights (as decimal strings), to double precision. */
export function probabilities(weights, total) {
  const scale = 10n ** 18n;
  const t = BigInt(total);
  return weights.map((w) => Number((BigInt(w) * scale) / t) / 1e18);
}

/**
 * A reproducible source of uniform bytes for ExactRandom (tests only): AES-128 in counter
 * mode, keyed by the SHA-256 of `seed`, encrypting zeros. Its output is indistinguishable from
 * uniform bytes for any test, and the same seed gives the same bytes.
 */
export function seededSource(seed) {
  const key = createHash("sha256").update(String(seed)).digest();
  const cipher = createCipheriv("aes-128-ctr", key.subarray(0, 16), Buffer.alloc(16));
  return (bytes) => {
    bytes.set(cipher.update(new Uint8Array(bytes.length)));
  };
}
