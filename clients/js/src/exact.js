// Exact integer arithmetic shared by every kind: dyadic numerators, the two-weight laws'
// integers and draw, parities, bit packing and SplitMix64 -- the Python client's _exact.py,
// integer for integer (its 80-digit decimal decisions through ./decimal.js).

import * as D from "./decimal.js";
import { ValueError, repr } from "./errors.js";

/** Binary digits of the dyadic probabilities of the exact Bernoulli bits (as the server's). */
export const PRECISION = 52;
export const ONE = 2n ** 52n;
const TOTAL_BITS = 62n;
const MASK32 = 0xffffffffn;
export const MASK64 = 0xffffffffffffffffn;
export const GOLDEN = 0x9e3779b97f4a7c15n;
const MIX1 = 0xbf58476d1ce4e5b9n;
const MIX2 = 0x94d049bb133111ebn;
// A ratio within 10^-70 (relative) of e^eps counts as above it (the server's decision margin).
const ONE_MINUS_MARGIN = D.subtract(D.fromInt(1), { c: 1n, e: -70 });

/** The integer a with a / 2^52 the floor ("down") or ceiling ("up") of the decimal value. */
export function dyadicNumerator(value, rounding) {
  const scaled = D.multiply(value, D.fromInt(ONE));
  return D.toIntegral(scaled, rounding === "down" ? "floor" : "ceiling");
}

/** Whether numerator / denominator <= bound (BigInts against an 80-digit decimal). */
export function ratioAtMost(numerator, denominator, bound) {
  return D.lessEqual(D.divide(D.fromInt(numerator), D.fromInt(denominator)), bound);
}

/** e^eps (1 - 10^-70) with 80 digits: the bound every integer ratio is held to. */
export function exactBound(epsilon) {
  return D.multiply(D.exp(epsilon), ONE_MINUS_MARGIN);
}

/** Whether numerator / denominator <= e^epsilon for BigInts >= 0 (0 / 0 allowed, x / 0 not). */
export function within(numerator, denominator, epsilon) {
  if (denominator === 0n) return numerator === 0n;
  return ratioAtMost(numerator, denominator, exactBound(epsilon));
}

/** The largest a with a / denominator <= e^epsilon (the server's largest_numerator_within). */
export function largestWithin(denominator, epsilon) {
  const bound = exactBound(epsilon);
  let candidate = D.toIntegral(D.multiply(bound, D.fromInt(denominator)), "floor");
  while (candidate > 0n && !ratioAtMost(candidate, denominator, bound)) candidate -= 1n;
  return candidate;
}

function bitLength(n) {
  return n === 0n ? 0 : n.toString(2).length;
}

/**
 * [a, d] of a two-weight law, the server's integers: d = 2^s the largest with
 * F a + R d <= 2^62, a the largest with a / d <= e^eps (decided on integers), then checked.
 */
export function ratioWeights(epsilon, nFavoured, nOther, kind) {
  const F = BigInt(nFavoured);
  const R = BigInt(nOther);
  const ceiling = D.toIntegral(D.exp(epsilon), "ceiling");
  const shift = Math.max(0, Number(TOTAL_BITS) - bitLength(F * ceiling + R));
  const d = 1n << BigInt(shift);
  const bound = exactBound(epsilon);
  const limit = (2n ** TOTAL_BITS - R * d) / F;
  const largest = largestWithin(d, epsilon);
  const a = largest < limit ? largest : limit;
  if (a <= d) {
    throw new ValueError(`epsilon=${repr(epsilon)} is too small for the ${repr(kind)} ` +
      "specification: the favoured outputs are no more likely than the others; use " +
      "epsilon >= 1e-12.");
  }
  if (!ratioAtMost(a, d, bound) || F * a + R * d > 2n ** TOTAL_BITS) {
    throw new ValueError(`the ${repr(kind)} weights a=${a}, d=${d} are not ${epsilon}-LDP.`);
  }
  return [a, d];
}

/**
 * One report of a two-weight law: [favoured, index] from one exactly uniform integer in
 * [0, F a + R d) (rejection sampling, no rounding).
 */
export function ratioDraw(rng, nFavoured, nOther, a, d) {
  const favouredTotal = BigInt(nFavoured) * a;
  const draw = rng.below(favouredTotal + BigInt(nOther) * d);
  if (draw < favouredTotal) return [true, Number(draw / a)];
  return [false, Number((draw - favouredTotal) / d)];
}

/** popcount(a & b) mod 2 for BigInts: 0 where the Hadamard entry H[a, b] is +1. */
export function parity(a, b) {
  let x = a & b;
  let p = 0;
  while (x !== 0n) {
    x &= x - 1n;
    p ^= 1;
  }
  return p;
}

/** Bits `ones` (positions set to 1) of an nBits vector, packed like
 * np.packbits(bits, bitorder="little"): an array of byte values. */
export function packed(ones, nBits) {
  const bytes = new Array(Math.ceil(nBits / 8)).fill(0);
  for (const position of ones) bytes[position >>> 3] |= 1 << (position & 7);
  return bytes;
}

/** The SplitMix64 finalizer (a bijection of 64-bit words), on BigInts. */
export function mix64(z) {
  z = ((z ^ (z >> 30n)) * MIX1) & MASK64;
  z = ((z ^ (z >> 27n)) * MIX2) & MASK64;
  return z ^ (z >> 31n);
}

/**
 * The server's keep_numerator: nOutputs-ary randomized response keeps the truth with a / 2^52,
 * a the largest integer with a (n - 1) / (2^52 - a) <= e^eps.
 */
export function keepNumerator(epsilon, nOutputs = 2) {
  const e = D.exp(epsilon);
  const nominal = D.divide(D.multiply(e, D.fromInt(ONE)), D.add(e, D.fromInt(nOutputs - 1)));
  let a = D.toIntegral(nominal, "floor");
  if (a > ONE - 1n) a = ONE - 1n;
  const others = BigInt(nOutputs - 1);
  while (a > 0n && !within(a * others, ONE - a, epsilon)) a -= 1n;
  if (a * BigInt(nOutputs) < ONE) {
    throw new ValueError(`epsilon=${repr(epsilon)} is too small for ${nOutputs}-ary ` +
      "randomized response at precision 2^-52.");
  }
  return a;
}

export { MASK32 };
