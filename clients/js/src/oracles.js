// The frequency oracles: randomized response, unary encoding (RAPPOR's SUE, OUE), subset
// selection, local hashing (OLH, BLH), Hadamard response and HRR -- the Python client's
// oracles.py, with the server's integers and hashes.
//
// Each builder takes the parsed specification and returns [nInputs, privatize], privatize(cell,
// rng) giving one report in the Python client's format (BigInt for a 64-bit hash seed).

import * as D from "./decimal.js";
import { ValueError, repr } from "./errors.js";
import {
  GOLDEN,
  MASK32,
  MASK64,
  ONE,
  dyadicNumerator,
  mix64,
  packed,
  parity,
  ratioAtMost,
  ratioDraw,
  ratioWeights,
} from "./exact.js";
import { roundHalfEven } from "./floats.js";
import { checkInt, common } from "./spec.js";

/** Local hashing: the largest number of buckets. */
export const MAX_BUCKETS = 2 ** 20;
// The packed-bit kinds (unary encoding, subset selection) draw and send n_inputs bits a
// report: larger domains (sklearn_ldp.deploy.limits' default max_cells) are refused on a
// device rather than freezing it.
const MAX_PACKED_CELLS = 2 ** 24;

function checkPackedSize(n, kind) {
  if (n > MAX_PACKED_CELLS) {
    throw new ValueError(`n_inputs of the ${repr(kind)} specification must be at most 2^24 ` +
      `(a report carries one bit a cell), got ${n}; use local hashing or Hadamard response ` +
      "for larger domains.");
  }
}

export function makeRandomizedResponse(n, epsilon) {
  // The server's integer weights: own cell a, each other cell d (exact two-weight law).
  const weights = n > 1 ? ratioWeights(epsilon, 1, n - 1, "randomized_response") : null;
  const privatize = (cell, rng) => {
    if (n === 1) return 0;
    const [keep, other] = ratioDraw(rng, 1, n - 1, ...weights);
    if (keep) return cell;
    return other + (other >= cell ? 1 : 0); // uniform over the n - 1 other cells
  };
  privatize.weights = weights; // exposed for the tests (the server's integers)
  return privatize;
}

/** [p, q] numerators (BigInt, over 2^52) of unary encoding, exactly as the server rounds. */
export function unaryNumerators(kind, epsilon) {
  const e = D.exp(epsilon);
  const one = D.fromInt(1);
  let pNominal;
  let qNominal;
  if (kind === "rappor") {
    const root = D.sqrt(e);
    pNominal = D.divide(root, D.add(one, root));
    qNominal = D.subtract(one, pNominal);
  } else {
    pNominal = D.divide(one, D.fromInt(2));
    qNominal = D.divide(one, D.add(e, one));
  }
  return dyadicUnary(pNominal, qNominal, kind, epsilon);
}

/** The server's UnaryEncoding rounding of nominal (p, q) decimals: p down, q up to multiples of
 * 2^-52, q raised until the ratio is within e^eps. */
export function dyadicUnary(pNominal, qNominal, kind, epsilon) {
  const e = D.exp(epsilon);
  const p = dyadicNumerator(pNominal, "down");
  let q = dyadicNumerator(qNominal, "up");
  while (q < p && !ratioAtMost(p * (ONE - q), q * (ONE - p), e)) q += 1n;
  if (p <= q) {
    throw new ValueError(`epsilon=${repr(epsilon)} is too small for ${repr(kind)}: at ` +
      "precision 2^-52 the probabilities p and q coincide.");
  }
  return [p, q];
}

export function makeUnary(kind, n, epsilon) {
  return makeUnaryFromNumerators(kind, n, unaryNumerators(kind, epsilon));
}

/** Unary encoding's client: bit cell is 1 with p / 2^52, the others with q / 2^52, packed. */
export function makeUnaryFromNumerators(kind, n, [pBig, qBig]) {
  checkPackedSize(n, kind);
  const p = Number(pBig); // < 2^52: exact Numbers
  const q = Number(qBig);
  const privatize = (cell, rng) => {
    const ones = [];
    for (let j = 0; j < n; j++) {
      if (rng.bernoulli52(j === cell ? p : q)) ones.push(j);
    }
    return packed(ones, n);
  };
  privatize.numerators = [pBig, qBig];
  return privatize;
}

/** Numerator (BigInt) of P(u in S) of subset selection, rounded down as the server does. */
export function subsetNumerator(n, k, epsilon) {
  const e = D.exp(epsilon);
  const ke = D.multiply(D.fromInt(k), e);
  const pNominal = D.divide(ke, D.add(ke, D.fromInt(n - k)));
  let p = dyadicNumerator(pNominal, "down");
  const N = BigInt(n);
  const K = BigInt(k);
  while (p > 0n && !ratioAtMost(p * (N - K), (ONE - p) * K, e)) p -= 1n;
  if (p * N <= K * ONE) {
    throw new ValueError(`epsilon=${repr(epsilon)} is too small for 'subset_selection' at ` +
      "precision 2^-52.");
  }
  return p;
}

/** `count` distinct integers uniform among the subsets of [0, size) (Floyd's algorithm). */
function uniformSubset(rng, size, count) {
  const chosen = new Set();
  for (let top = size - count; top < size; top++) {
    const pick = rng.belowNumber(top + 1);
    chosen.add(chosen.has(pick) ? top : pick);
  }
  return [...chosen];
}

function subsetSelection(spec) {
  const [n, epsilon, params] = common(spec, ["subset_size"]);
  if (n < 2) throw new ValueError("the 'subset_selection' specification needs n_inputs >= 2.");
  checkPackedSize(n, "subset_selection");
  if (params.subset_size === undefined || params.subset_size === null) {
    throw new ValueError("the 'subset_selection' specification must pin " +
      "params['subset_size'] (the server writes the size it chose).");
  }
  const k = checkInt(params.subset_size, "subset_size");
  if (k > n - 1) {
    throw new ValueError(`subset_size must lie in [1, n_inputs - 1] = [1, ${n - 1}], got ${k}.`);
  }
  const pBig = subsetNumerator(n, k, epsilon);
  const p = Number(pBig);
  const privatize = (cell, rng) => {
    const include = rng.bernoulli52(p);
    // The other members: a uniform subset of the n - 1 cells other than the user's.
    const others = uniformSubset(rng, n - 1, k - (include ? 1 : 0));
    const ones = others.map((j) => j + (j >= cell ? 1 : 0));
    if (include) ones.push(cell);
    return packed(ones, n);
  };
  privatize.numerator = pBig;
  return [n, privatize];
}

/** The server's default number of buckets (with the platform's exp, as the server's
 * math.exp): round(e^eps) + 1 for tabulation, the power of two of least rare-item variance
 * for the linear family. The server writes n_buckets into every spec it ships. */
export function olhBuckets(epsilon, hashFamily = "tabulation") {
  const e = Math.exp(epsilon);
  if (hashFamily === "linear") {
    let best = 2;
    for (let g = 2; g <= MAX_BUCKETS; g *= 2) {
      if ((e + g - 1) ** 2 / (g - 1) < (e + best - 1) ** 2 / (best - 1)) best = g;
    }
    return best;
  }
  return Math.min(Math.max(roundHalfEven(e) + 1, 2), MAX_BUCKETS);
}

function hashFamilyOf(params) {
  const family = params.hash_family ?? "tabulation"; // absent: a spec from before "linear"
  if (family !== "tabulation" && family !== "linear") {
    throw new ValueError(`hash_family must be 'tabulation' or 'linear', got ${repr(family)}.`);
  }
  return family;
}

function isqrt(n) {
  let r = Math.floor(Math.sqrt(n));
  while (r * r > n) r -= 1;
  while ((r + 1) * (r + 1) <= n) r += 1;
  return r;
}

/**
 * The server's hash H_seed(cell) of local hashing, bit for bit: two-character additive
 * tabulation with SplitMix64 entries, or (linear family) a GF(2) matrix of SplitMix64 rows.
 */
export function makeBucketHash(n, g, hashFamily) {
  const G = BigInt(g);
  if (hashFamily === "linear") {
    const nRows = BigInt(g.toString(2).length - 1);
    const cellBits = Math.max(1, (n - 1).toString(2).length);
    const bitsMask = (1n << BigInt(cellBits)) - 1n;
    return (seed, cell) => {
      // H(x) = M x over GF(2); row k of M is the k-th SplitMix64 output, cut to the cell bits.
      const x = BigInt(cell);
      let hashed = 0n;
      for (let k = 0n; k < nRows; k++) {
        const row = mix64((seed + (k + 1n) * GOLDEN) & MASK64) & bitsMask;
        hashed |= BigInt(parity(row, x)) << k;
      }
      return Number(hashed);
    };
  }
  const nLo = n > 1 ? isqrt(n - 1) + 1 : 1;
  return (seed, cell) => {
    const low = mix64((seed + BigInt((cell % nLo) + 1) * GOLDEN) & MASK64) >> 32n;
    const high = mix64((seed + BigInt(Math.floor(cell / nLo) + 1) * GOLDEN) & MASK64) & MASK32;
    return Number((((low + high) & MASK32) * G) >> 32n);
  };
}

export function makeLocalHashing(n, epsilon, gValue, hashFamily) {
  const g = checkInt(gValue, "n_buckets", 2);
  if (g > MAX_BUCKETS) throw new ValueError(`n_buckets must be at most ${MAX_BUCKETS}, got ${g}.`);
  if (hashFamily === "linear" && (g & (g - 1)) !== 0) {
    throw new ValueError(`the linear hash family needs n_buckets a power of two, got ${g}.`);
  }
  // g-ary randomized response of the bucket with the server's integer weights.
  const weights = ratioWeights(epsilon, 1, g - 1, "olh");
  const bucket = makeBucketHash(n, g, hashFamily);
  const reportGivenSeed = (cell, seed, rng) => {
    const hashed = bucket(seed, cell);
    const [keep, other] = ratioDraw(rng, 1, g - 1, ...weights);
    return [seed, keep ? hashed : other + (other >= hashed ? 1 : 0)];
  };
  const privatize = (cell, rng) => reportGivenSeed(cell, rng.bitsBigInt(64), rng);
  // Exposed for the tests: hash agreement, the server's integers, the law given a seed.
  privatize.bucket = bucket;
  privatize.weights = weights;
  privatize.reportGivenSeed = reportGivenSeed;
  return privatize;
}

function olh(spec) {
  const [n, epsilon, params] = common(spec, ["n_buckets", "hash_family"]);
  const family = hashFamilyOf(params);
  const g = params.n_buckets ?? olhBuckets(epsilon, family);
  return [n, makeLocalHashing(n, epsilon, g, family)];
}

function blh(spec) {
  const [n, epsilon, params] = common(spec, ["hash_family"]);
  return [n, makeLocalHashing(n, epsilon, 2, hashFamilyOf(params))];
}

// Python's round(x, 9) for the layout formula (only keeps one ulp of exp from moving a ceiling).
function round9(x) {
  return roundHalfEven(x * 1e9) / 1e9;
}

/** [nBlocks, blockSize] of Hadamard response with the server's formula (the paper's layout,
 * which a specification without a layout means). */
export function hadamardShape(n, epsilon) {
  const nBlocks = 2 ** (Math.ceil(round9(Math.log2(Math.min(Math.exp(epsilon), 2 * n)))) - 1);
  const blockSize = 2 ** Math.ceil(round9(Math.log2(n / nBlocks + 1)));
  return [nBlocks, blockSize];
}

function isPowerOfTwo(x) {
  return x >= 1 && 2 ** Math.round(Math.log2(x)) === x;
}

function hadamardLayout(n, epsilon, params) {
  const keys = ["n_blocks", "block_size", "hole"];
  const given = Object.keys(params);
  if (given.length === 0) {
    const [nBlocks, blockSize] = hadamardShape(n, epsilon);
    if (nBlocks < 1) {
      // e^eps rounds to 1 at 9 digits (the server refuses epsilon < 1e-6 before this).
      throw new ValueError(`epsilon=${repr(epsilon)} is too small for 'hadamard': use ` +
        "epsilon >= 1e-6.");
    }
    return [nBlocks, blockSize, 1];
  }
  if (given.length !== 3 || !keys.every((key) => given.includes(key))) {
    throw new ValueError(`the 'hadamard' specification must give all of ` +
      `('n_blocks', 'block_size', 'hole') or none, got ${repr(given.sort())}.`);
  }
  const [nBlocks, blockSize, hole] = keys.map((key) => checkInt(params[key], key));
  if (blockSize < 2 || !isPowerOfTwo(blockSize)) {
    throw new ValueError(`block_size must be a power of two, at least 2; got ${blockSize}.`);
  }
  if (!isPowerOfTwo(hole) || 2 * hole > blockSize) {
    throw new ValueError(`hole must be a power of two at most block_size / 2; got ${hole}.`);
  }
  const needed = Math.ceil(n / (blockSize - hole)); // the full blocks and the partial one
  if (nBlocks < needed || nBlocks * blockSize > 8 * n) {
    throw new ValueError(`n_blocks must be at least ${needed} with at most ${8 * n} outputs; ` +
      `got ${nBlocks} blocks of ${blockSize}.`);
  }
  return [nBlocks, blockSize, hole];
}

function hadamard(spec) {
  const [n, epsilon, params] = common(spec, ["n_blocks", "block_size", "hole"]);
  const [blockCount, b, hole] = hadamardLayout(n, epsilon, params);
  const load = b - hole; // cells of a full block, at the columns hole .. b - 1
  const nFull = Math.floor(n / load); // then one partial block, at the columns 1, 2, ...
  const nOutputs = blockCount * b;
  const half = b / 2;
  // The server's integer weights: a on the favoured half of the block, d elsewhere.
  const weights = ratioWeights(epsilon, half, nOutputs - half, "hadamard");
  const privatize = (cell, rng) => {
    const block = Math.floor(cell / load);
    const start = block * b; // first output of the user's block
    const column = BigInt((cell % load) + (block < nFull ? hole : 1));
    const [favoured, index] = ratioDraw(rng, half, nOutputs - half, ...weights);
    if (!favoured && index >= half) {
      const outside = index - half;
      return outside + (outside >= start ? b : 0); // skip the user's own block
    }
    // The index-th position of the wanted parity: a 0 inserted at the lowest set bit of the
    // column, then that bit set if the parity is wrong (a bijection onto each half).
    const i = BigInt(index);
    const low = column & -column;
    let position = ((i & -low) << 1n) | (i & (low - 1n));
    if (parity(position, column) !== (favoured ? 0 : 1)) position |= low;
    return start + Number(position);
  };
  privatize.weights = weights;
  return [n, privatize];
}

/** HRR of n cells: a uniform coefficient in [1, K) and its sign, kept with the server's
 * integer weights; the report is 2 coefficient + bit, out of 2K outputs. */
export function makeHrr(n, epsilon) {
  const K = Math.max(2, 2 ** (n - 1).toString(2).length);
  const weights = ratioWeights(epsilon, 1, 1, "hrr");
  const privatize = (cell, rng) => {
    const coefficient = 1 + rng.belowNumber(K - 1);
    const flipped = !ratioDraw(rng, 1, 1, ...weights)[0];
    const sign = 1 ^ parity(BigInt(coefficient), BigInt(cell)) ^ (flipped ? 1 : 0);
    return 2 * coefficient + sign;
  };
  privatize.nOutputs = 2 * K;
  privatize.weights = weights;
  return privatize;
}

function hrr(spec) {
  const [n, epsilon] = common(spec);
  return [n, makeHrr(n, epsilon)];
}

/** The frequency oracles by kind name. */
export const ORACLE_KINDS = {
  randomized_response: (spec) => {
    const [n, epsilon] = common(spec);
    return [n, makeRandomizedResponse(n, epsilon)];
  },
  rappor: (spec) => {
    const [n, epsilon] = common(spec);
    return [n, makeUnary("rappor", n, epsilon)];
  },
  oue: (spec) => {
    const [n, epsilon] = common(spec);
    return [n, makeUnary("oue", n, epsilon)];
  },
  olh,
  blh,
  hadamard,
  hrr,
  subset_selection: subsetSelection,
};
