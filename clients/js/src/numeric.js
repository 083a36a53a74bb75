// The numeric kinds on the server's public grid (duchi, piecewise, hybrid, square_wave): the
// Python client's numeric.py. Each reports a grid point with the server's exact integer law
// (mechanisms/_base/window.py), re-derived here and compared with the spec's `grid`.

import * as D from "./decimal.js";
import { ValueError, repr, shortRepr } from "./errors.js";
import { largestWithin, within } from "./exact.js";
import { nextDown, roundHalfEven } from "./floats.js";
import { checkBudget, checkFields, isPlainObject } from "./spec.js";

const MAX_SQUARE_WAVE_CELLS = 2 ** 12;
const MAX_GRID_SIZE = 2 ** 16;
const DEFAULT_GRID_SIZE = 4096;
const FRACTION_BITS = 52; // the random rounding of the grid kinds
const TWO_POINT_BITS = 28; // a + b of Duchi's two-point law
const HYBRID_EPSILON_STAR = 0.6093524930273103; // the server's float literal

const view = new DataView(new ArrayBuffer(8));

// The binary exponent of a finite double x != 0: x = m 2^k with 1 <= |m| < 2.
function binaryExponent(x) {
  view.setFloat64(0, Math.abs(x));
  const biased = Number((view.getBigUint64(0) >> 52n) & 0x7ffn);
  if (biased > 0) return biased - 1023;
  return -1074 + (view.getBigUint64(0).toString(2).length - 1); // subnormal
}

/** Python's math.ulp of a finite double. */
function ulp(x) {
  if (x === 0) return 2 ** -1074;
  return 2 ** Math.max(binaryExponent(x) - 52, -1074);
}

/** The double nearest to num / den (BigInts, den > 0), ties to even: float(Fraction). */
export function rationalToDouble(num, den) {
  if (num === 0n) return 0;
  const negative = num < 0n;
  const n = negative ? -num : num;
  // Scale so that the quotient has 54 or 55 bits, round to 53 with the remainder as sticky.
  const shift = 55 - (n.toString(2).length - den.toString(2).length);
  const scaledN = shift >= 0 ? n << BigInt(shift) : n;
  const scaledD = shift >= 0 ? den : den << BigInt(-shift);
  let q = scaledN / scaledD;
  const sticky = scaledN % scaledD !== 0n;
  const extra = q.toString(2).length - 53;
  let exponent = -shift;
  const dropped = q & ((1n << BigInt(extra)) - 1n);
  q >>= BigInt(extra);
  exponent += extra;
  const half = 1n << BigInt(extra - 1);
  if (dropped > half || (dropped === half && (sticky || (q & 1n) === 1n))) q += 1n;
  const value = Number(q) * 2 ** exponent; // q < 2^54: exact; scaling by 2^k is exact
  return negative ? -value : value;
}

function checkNumber(value, name, kind) {
  if (typeof value !== "number" || !Number.isFinite(value)) {
    throw new ValueError(`${name} of the ${repr(kind)} specification must be a finite ` +
      `number, got ${repr(value)}.`);
  }
  return value;
}

function checkBounds(pair, name, kind) {
  if (!Array.isArray(pair) || pair.length !== 2) {
    throw new ValueError(`${name} of the ${repr(kind)} specification must be a pair [low, ` +
      `high], got ${repr(pair)}.`);
  }
  const low = checkNumber(pair[0], name, kind);
  const high = checkNumber(pair[1], name, kind);
  if (!(low < high)) {
    throw new ValueError(`${name} of the ${repr(kind)} specification must satisfy low < ` +
      `high, got ${repr(pair)}.`);
  }
  return [low, high];
}

export function checkValue(value, [low, high], name) {
  if (typeof value !== "number") {
    throw new ValueError(`${name} must be a number, got ${repr(value)}.`);
  }
  if (!(low <= value && value <= high)) { // NaN compares false: refused too
    throw new ValueError(`${name} must lie in the declared bounds [${low}, ${high}], got ` +
      `${repr(value)}.`);
  }
  return value;
}

/** window.window_weights: [a, b] (BigInt) with a / b <= e^eps exactly. */
function windowWeights(epsilon) {
  const extra = Math.max(0, -(binaryExponent(epsilon) + 1) + 1); // -frexp(eps)[1] + 1
  const denominator = 2n ** BigInt(Math.min(24 + extra, 44));
  const a = largestWithin(denominator, epsilon);
  if (a <= 2n ** 45n) return [a, denominator];
  const top = 2n ** 45n;
  let b = D.toIntegral(D.divide(D.fromInt(top), D.exp(epsilon)), "ceiling");
  if (b < 1n) b = 1n;
  while (!within(top, b, epsilon)) b += 1n;
  while (b > 1n && within(top, b - 1n, epsilon)) b -= 1n;
  return [top, b];
}

/** window.two_point_weights: a + b = 2^28, a the largest with a / b <= e^eps. */
function twoPointWeights(epsilon) {
  const total = 2n ** BigInt(TWO_POINT_BITS);
  const e = D.exp(epsilon);
  let a = D.toIntegral(D.divide(D.multiply(e, D.fromInt(total)), D.add(e, D.fromInt(1))),
    "floor");
  if (a > total - 1n) a = total - 1n;
  while (!within(a, total - a, epsilon)) a -= 1n;
  while (a + 1n < total && within(a + 1n, total - a - 1n, epsilon)) a += 1n;
  return [a, total - a];
}

function windowLength(cells, share) {
  const length = Number(D.toIntegral(D.multiply(D.fromInt(cells), share), "half_even"));
  return Math.min(Math.max(length, 1), cells - 1);
}

/** The window law (M cells, window L, weights a > b) sampled with the server's integers. */
class WindowLaw {
  constructor(cells, window, a, b, epsilon, fractionBits, kind) {
    if (!(a > b && b >= 1n) || !within(a, b, epsilon)) {
      throw new ValueError(`the weights [${a}, ${b}] of the ${repr(kind)} grid do not ` +
        `satisfy b < a <= e^epsilon b for epsilon=${repr(epsilon)} (epsilon too small for ` +
        "integer weights, or an edited grid).");
    }
    Object.assign(this, { cells, window, a, b, bits: fractionBits });
    this.total = BigInt(window) * a + BigInt(cells - window) * b;
    this.span = cells - window;
    if (this.total >= 2n ** 62n) {
      throw new ValueError(`the ${repr(kind)} grid is too large for 64-bit sampling.`);
    }
  }

  spec() {
    return { cells: this.cells, window: this.window, weights: [Number(this.a), Number(this.b)],
      fraction_bits: this.bits };
  }

  /** [alpha, beta] as doubles of the exact rationals: alpha j + beta is unbiased for 2u - 1. */
  decoder() {
    const M = BigInt(this.cells);
    const L = BigInt(this.window);
    const { a, b, total: T } = this;
    const S = BigInt(this.span);
    // slope = L (a - b) / T, intercept = (b M (M-1) + (a-b) L (L-1)) / 2T,
    // alpha = 2 / (slope S) = 2T / (L (a-b) S), beta = -alpha intercept - 1.
    const alphaNum = 2n * T;
    const alphaDen = L * (a - b) * S;
    const interceptNum = b * M * (M - 1n) + (a - b) * L * (L - 1n);
    // beta = -(2T interceptNum) / (alphaDen 2T) - 1 = -(interceptNum + alphaDen) / alphaDen.
    return [[alphaNum, alphaDen], [-(interceptNum + alphaDen), alphaDen]];
  }

  /** One cell index for the unit value u in [0, 1]. */
  draw(u, rng) {
    const p = u * this.span;
    const w0 = Math.min(Math.floor(p), this.span - 1);
    const scale = 2 ** this.bits;
    const numerator = Math.min(Math.max(roundHalfEven((p - w0) * scale), 0), scale);
    const { a, b, total } = this;
    if (this.cells === 2 && (total & (total - 1n)) === 0n) {
      const bits = this.bits + total.toString(2).length - 1;
      const threshold = b * BigInt(scale) + BigInt(numerator) * (a - b);
      return rng.bitsBigInt(bits) < threshold ? 1 : 0;
    }
    const w = w0 + (rng.bitsNumber(this.bits) < numerator ? 1 : 0);
    const draw = rng.below(total);
    // The window (a values of U per cell), else the M - L other cells in order.
    const inWindow = BigInt(this.window) * a;
    if (draw < inWindow) return w + Number(draw / a);
    const cell = Number((draw - inWindow) / b);
    return cell >= w ? cell + this.window : cell;
  }
}

/** AffineGrid values: float(j) * slope + offset, slope and offset the rationals as doubles. */
function gridValues([slopeNum, slopeDen], [offsetNum, offsetDen]) {
  const slope = rationalToDouble(slopeNum, slopeDen);
  const offset = rationalToDouble(offsetNum, offsetDen);
  return (cell) => cell * slope + offset;
}

function checkResolution([low, high], cells, name, kind) {
  const spacing = ulp(Math.max(Math.abs(low), Math.abs(high)));
  if (!Number.isFinite(high - low) || high - low < cells * spacing) {
    throw new ValueError(`${name} (${repr(low)}, ${repr(high)}) of the ${repr(kind)} ` +
      "specification are too narrow for float64 at that magnitude: the width must be at " +
      `least ${cells} grid cells times the spacing of floats there (${repr(spacing)}).`);
  }
}

function sameJSON(x, y) {
  if (isPlainObject(x) && isPlainObject(y)) {
    const keys = new Set([...Object.keys(x), ...Object.keys(y)]);
    return [...keys].every((key) => sameJSON(x[key], y[key]));
  }
  if (Array.isArray(x) && Array.isArray(y)) {
    return x.length === y.length && x.every((value, i) => sameJSON(value, y[i]));
  }
  return x === y;
}

/** Refuse a spec whose grid differs from what epsilon and params give, naming the field. */
function checkGrid(spec, derived, kind) {
  const grid = spec.grid;
  if (!isPlainObject(grid)) {
    throw new ValueError(`the ${repr(kind)} specification needs its 'grid', got ${repr(grid)}.`);
  }
  const keys = [...new Set([...Object.keys(grid), ...Object.keys(derived)])].sort();
  for (const key of keys) {
    if (!sameJSON(grid[key], derived[key])) {
      throw new ValueError(`grid[${repr(key)}] of the ${repr(kind)} specification is ` +
        `${repr(grid[key])}, but its epsilon and params give ${repr(derived[key])}: an ` +
        "edited grid is refused.");
    }
  }
}

function gridSize(value, kind, minimum = 3) {
  if (typeof value !== "number" || !Number.isInteger(value) || value < minimum ||
      value > MAX_GRID_SIZE) {
    throw new ValueError(`params['grid_size'] of the ${repr(kind)} specification must be an ` +
      `integer in [${minimum}, ${MAX_GRID_SIZE}], got ${repr(value)}.`);
  }
  return value;
}

function unitFraction(value, [low, high]) {
  return Math.min(Math.max((value - low) / (high - low), 0), 1);
}

/** [draw(u, rng), grid]: one report of the unit value u by Duchi (0 or 1), Piecewise or
 * Hybrid (a grid value), with the server's integers; grid the server's grid_spec(). */
function unitRandomizer(kind, epsilon, size, name) {
  const duchi = new WindowLaw(2, 1, ...twoPointWeights(epsilon), epsilon,
    63 - TWO_POINT_BITS, name);
  if (kind === "duchi") return [(u, rng) => duchi.draw(u, rng), duchi.spec()];
  const [a, b] = windowWeights(epsilon);
  const one = D.fromInt(1);
  const share = D.divide(one, D.add(one, D.exp(epsilon / 2)));
  const piecewise = new WindowLaw(size, windowLength(size, share), a, b, epsilon,
    FRACTION_BITS, name);
  const value = gridValues(...piecewise.decoder());
  const drawPiecewise = (u, rng) => value(piecewise.draw(u, rng));
  if (kind === "piecewise") return [drawPiecewise, piecewise.spec()];
  const duchiValue = gridValues(...duchi.decoder());
  let alpha = 0n;
  if (epsilon > HYBRID_EPSILON_STAR) {
    const numerator = BigInt(piecewise.window) * (piecewise.a - piecewise.b);
    alpha = (2n ** BigInt(FRACTION_BITS + 1) * numerator + piecewise.total) /
      (2n * piecewise.total);
  }
  const alphaNumber = Number(alpha); // <= 2^52
  const drawHybrid = (u, rng) => (rng.bitsNumber(FRACTION_BITS) < alphaNumber
    ? drawPiecewise(u, rng) : duchiValue(duchi.draw(u, rng)));
  return [drawHybrid, { piecewise: piecewise.spec(), duchi: duchi.spec(),
    alpha_numerator: alphaNumber, alpha_bits: FRACTION_BITS }];
}

function numericSpec(spec) {
  const kind = spec.mechanism;
  checkFields(spec, kind, ["epsilon", "bounds", "grid"], ["params"]);
  const epsilon = checkBudget(spec.epsilon, "epsilon", kind);
  const bounds = checkBounds(spec.bounds, "bounds", kind);
  const params = spec.params ?? {};
  if (!isPlainObject(params)) {
    throw new ValueError(`params of the ${repr(kind)} specification must be an object, got ` +
      `${repr(params)}.`);
  }
  const allowed = { duchi: [], square_wave: ["n_bins", "n_buckets", "grid_size"] }[kind] ??
    ["grid_size"];
  const unknown = Object.keys(params).filter((key) => !allowed.includes(key)).sort();
  if (unknown.length) {
    throw new ValueError(`the ${repr(kind)} specification has parameters ${repr(unknown)} ` +
      "that this client does not know; update the client.");
  }
  return [kind, epsilon, bounds, params];
}

// A numeric kind's builder returns [1, privatize(number, rng)]: one number a record.
function meanKind(spec) {
  const [kind, epsilon, bounds, params] = numericSpec(spec);
  const size = gridSize(Object.hasOwn(params, "grid_size") ? params.grid_size : DEFAULT_GRID_SIZE,
    kind);
  const [draw, grid] = unitRandomizer(kind, epsilon, size, kind);
  checkGrid(spec, grid, kind);
  checkResolution(bounds, kind === "duchi" ? 2 : size, "bounds", kind);
  const privatize = (value, rng) => draw(unitFraction(checkValue(value, bounds, "the value"),
    bounds), rng);
  return [1, privatize, { takesValues: true }];
}

function squareWaveBandwidth(epsilon) {
  if (epsilon < 1e-20) return { c: 5n, e: -1 };
  const eps = D.fromFloat(epsilon);
  const e = D.exp(epsilon);
  const one = D.fromInt(1);
  const numerator = D.add(D.subtract(D.multiply(eps, e), e), one);
  const denominator = D.multiply(D.multiply(D.fromInt(2), e), D.subtract(D.subtract(e, one), eps));
  return D.divide(numerator, denominator);
}

function squareWave(spec) {
  const [kind, epsilon, bounds, params] = numericSpec(spec);
  for (const name of ["n_bins", "n_buckets"]) {
    const value = params[name];
    if (value !== undefined && value !== null && (typeof value !== "number" ||
        !Number.isInteger(value) || value < 2 || value > MAX_SQUARE_WAVE_CELLS)) {
      throw new ValueError(`${name} of the 'square_wave' specification must be an integer ` +
        `in [2, ${MAX_SQUARE_WAVE_CELLS}], got ${repr(value)}.`);
    }
  }
  const nBuckets = params.n_buckets || params.n_bins || 1024;
  let size = params.grid_size ?? nBuckets * Math.ceil(DEFAULT_GRID_SIZE / nBuckets);
  size = gridSize(size, kind);
  if (size % nBuckets) {
    throw new ValueError(`params['grid_size']=${repr(size)} of the 'square_wave' ` +
      `specification must be a multiple of n_buckets=${nBuckets}.`);
  }
  const bandwidth = squareWaveBandwidth(epsilon);
  const twice = D.multiply(D.fromInt(2), bandwidth);
  const share = D.divide(twice, D.add(D.fromInt(1), twice));
  const law = new WindowLaw(size, windowLength(size, share), ...windowWeights(epsilon), epsilon,
    FRACTION_BITS, kind);
  checkGrid(spec, law.spec(), kind);
  checkResolution(bounds, size, "bounds", kind);
  // Cell j reports its centre (j + 1/2) / (M - L) - b' of [-b', 1 + b'].
  const span = BigInt(law.span);
  const value = gridValues([1n, span], [BigInt(1 - law.window), 2n * span]);
  const privatize = (number, rng) => value(law.draw(unitFraction(
    checkValue(number, bounds, "the value"), bounds), rng));
  return [1, privatize, { takesValues: true }];
}

const MAX_ATTRIBUTES = 1024; // multi_attribute.MAX_ATTRIBUTES
const MEAN_KINDS = ["duchi", "piecewise", "hybrid"];

// [m, k] with x = m 2^k exactly (x a finite double >= 0).
export function dyadic(x) {
  const d = D.fromFloat(x); // m 5^-k 10^k for k < 0, or an integer
  if (d.e >= 0) return [d.c, 0];
  return [d.c / 5n ** BigInt(-d.e), d.e];
}

/** numeric.split_budget: the largest double whose `parts`-fold is at most epsilon (exactly). */
function evenShare(epsilon, parts) {
  let share = epsilon / parts;
  const [em, ek] = dyadic(epsilon);
  const exceeds = (x) => {
    const [m, k] = dyadic(x);
    const shift = Math.min(k, ek);
    return m * BigInt(parts) * 2n ** BigInt(k - shift) > em * 2n ** BigInt(ek - shift);
  };
  while (exceeds(share)) share = nextDown(share);
  return share;
}

function sampledMean(spec) {
  const kind = "sampled_mean";
  checkFields(spec, kind, ["epsilon", "bounds", "params", "grid"]);
  const epsilon = checkBudget(spec.epsilon, "epsilon", kind);
  const pairs = spec.bounds;
  if (!Array.isArray(pairs) || pairs.length < 1 || pairs.length > MAX_ATTRIBUTES) {
    throw new ValueError(`bounds of the 'sampled_mean' specification must be a list of 1 to ` +
      `${MAX_ATTRIBUTES} pairs, got ${shortRepr(pairs)}.`);
  }
  const bounds = pairs.map((pair, j) => checkBounds(pair, `bounds[${j}]`, kind));
  const params = spec.params;
  const keys = isPlainObject(params) ? Object.keys(params).sort().join(",") : null;
  if (keys !== "base,grid_size,n_sampled") {
    throw new ValueError("params of the 'sampled_mean' specification must be {'base', " +
      `'n_sampled', 'grid_size'}, got ${repr(params)}.`);
  }
  const base = params.base;
  if (!MEAN_KINDS.includes(base)) {
    throw new ValueError(`params['base'] of the 'sampled_mean' specification must be one of ` +
      `('duchi', 'piecewise', 'hybrid'), got ${repr(base)}.`);
  }
  const d = bounds.length;
  const k = params.n_sampled;
  if (typeof k !== "number" || !Number.isInteger(k) || k < 1 || k > d) {
    throw new ValueError(`params['n_sampled'] of the 'sampled_mean' specification must be an ` +
      `integer in [1, ${d}], got ${repr(k)}.`);
  }
  let size = params.grid_size;
  if (base === "duchi" && size !== null) {
    throw new ValueError("params['grid_size'] of the 'sampled_mean' specification must be " +
      `null for base 'duchi', got ${repr(size)}.`);
  }
  if (base !== "duchi") size = gridSize(size, kind);
  const valueEpsilon = evenShare(epsilon, k);
  const [draw, grid] = unitRandomizer(base, valueEpsilon, size, kind);
  checkGrid(spec, { value_epsilon: valueEpsilon, base: grid }, kind);
  bounds.forEach((pair, j) => checkResolution(pair, size || 2, `bounds[${j}]`, kind));
  const privatize = (value, rng) => {
    if (!Array.isArray(value) || value.length !== d) {
      throw new ValueError(`a 'sampled_mean' record is a list of ${d} numbers (one per ` +
        `attribute), got ${repr(value)}.`);
    }
    const numbers = value.map((x, j) => checkValue(x, bounds[j], `attribute ${j} of the record`));
    // k attributes uniformly without replacement, in uniformly random order (a partial
    // Fisher-Yates shuffle on exact uniform integers).
    const order = numbers.map((_, j) => j);
    for (let i = 0; i < k; i++) {
      const j = i + rng.belowNumber(d - i);
      [order[i], order[j]] = [order[j], order[i]];
    }
    const attributes = order.slice(0, k);
    return [...attributes, ...attributes.map((a) => draw(unitFraction(numbers[a], bounds[a]),
      rng))];
  };
  return [d, privatize, { takesValues: true }];
}

export { checkBounds, meanKind, squareWave, sampledMean, MEAN_KINDS };

/** The numeric kinds by kind name (specification version 2). */
export const NUMERIC_KINDS = {
  sampled_mean: sampledMean,
  duchi: meanKind,
  piecewise: meanKind,
  hybrid: meanKind,
  square_wave: squareWave,
};
