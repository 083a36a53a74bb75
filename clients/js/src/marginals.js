// The marginal kinds (inp_rr, inp_ps, inp_em, inp_ht, marg_rr, marg_ps, marg_ht), their
// Hadamard sign flip and InpEM's budget split -- the Python client's marginals.py.

import { ValueError, repr } from "./errors.js";
import { ONE, keepNumerator, parity, within } from "./exact.js";
import { makeRandomizedResponse, makeUnary, unaryNumerators } from "./oracles.js";
import { nextDown } from "./floats.js";
import { bitLength, checkInt, common } from "./spec.js";

/** The flip test of InpHT / MargHT: flipped when a uniform 52-bit word is >= a. */
function signFlip(epsilon) {
  const a = Number(keepNumerator(epsilon, 2)); // < 2^52: exact
  return (rng) => rng.word52() >= a;
}

/** [share, oracles]: the server's split_budget for InpEM: eps / d per attribute, lowered by
 * one float step while the product of the sampled worst ratios is not within e^eps. */
export function splitBudget(epsilon, sizes, unary) {
  let share = epsilon / sizes.length;
  for (let step = 0; step < 64; step++) {
    let oracles;
    let ratios;
    if (unary) {
      oracles = sizes.map((size) => makeUnary("oue", size, share));
      const [p, q] = unaryNumerators("oue", share);
      ratios = sizes.map(() => [p * (ONE - q), q * (ONE - p)]);
    } else {
      oracles = sizes.map((size) => makeRandomizedResponse(size, share));
      ratios = oracles.map((oracle) => oracle.weights);
    }
    const numerator = ratios.reduce((product, [n]) => product * n, 1n);
    const denominator = ratios.reduce((product, [, d]) => product * d, 1n);
    if (within(numerator, denominator, epsilon)) return [share, oracles];
    share = nextDown(share);
  }
  throw new ValueError(`no budget share near epsilon / ${sizes.length} composes within ` +
    `epsilon=${repr(epsilon)}.`);
}

function marginalSpec(spec) {
  const [n, epsilon, params] = common(spec, ["shape", "max_order"]);
  const kind = spec.mechanism;
  const shape = params.shape;
  if (!Array.isArray(shape) || !shape.length || shape.some((size) => typeof size !== "number" ||
      !Number.isInteger(size) || size < 2)) {
    throw new ValueError(`params['shape'] of the ${repr(kind)} specification must be a list ` +
      `of category counts >= 2, got ${repr(shape)}.`);
  }
  const product = shape.reduce((p, size) => p * BigInt(size), 1n);
  if (product !== BigInt(n)) {
    throw new ValueError(`n_inputs=${n} of the ${repr(kind)} specification does not match ` +
      `its shape ${repr(shape)}.`);
  }
  const maxOrder = checkInt(params.max_order, "max_order");
  if (maxOrder > shape.length) {
    throw new ValueError(`max_order must be at most ${shape.length}, got ${maxOrder}.`);
  }
  return [n, epsilon, shape, maxOrder];
}

function attributeCodes(cell, shape) {
  const codes = new Array(shape.length).fill(0);
  for (let position = shape.length - 1; position >= 0; position--) {
    codes[position] = cell % shape[position];
    cell = Math.floor(cell / shape[position]);
  }
  return codes;
}


/** Concatenated ceil(log2 r)-bit codes of `members` (BigInt), the first most significant. */
function binaryCode(codes, members, shape) {
  let code = 0n;
  for (const a of members) code = (code << BigInt(bitLength(shape[a] - 1))) | BigInt(codes[a]);
  return code;
}

function setCell(codes, members, shape) {
  return members.reduce((cell, a) => cell * shape[a] + codes[a], 0);
}

function combinations(n, k) {
  const result = [];
  const walk = (start, chosen) => {
    if (chosen.length === k) {
      result.push([...chosen]);
      return;
    }
    for (let i = start; i < n; i++) walk(i + 1, [...chosen, i]);
  };
  walk(0, []);
  return result;
}

function attributeSets(shape, maxOrder) {
  const sets = combinations(shape.length, maxOrder);
  return [sets, sets.map((members) => members.reduce((p, a) => p * shape[a], 1))];
}

function inpEm(spec) {
  const [n, epsilon, shape] = marginalSpec(spec);
  const [, attributes] = splitBudget(epsilon, shape, false); // the server's shares
  return [n, (cell, rng) => {
    const codes = attributeCodes(cell, shape);
    return shape.reduce((noisy, size, i) => noisy * size + attributes[i](codes[i], rng), 0);
  }];
}

function inpHt(spec) {
  const [n, epsilon, shape, maxOrder] = marginalSpec(spec);
  const everything = shape.map((_, a) => a);
  const shifts = everything.map((a) => everything.filter((b) => b > a)
    .reduce((sum, b) => sum + bitLength(shape[b] - 1), 0));
  const masks = []; // the server's order: by order, attribute set, then C order of the masks
  for (let order = 1; order <= maxOrder; order++) {
    for (const members of combinations(shape.length, order)) {
      let partial = [0n];
      for (const a of members) {
        const next = [];
        for (const prefix of partial) {
          for (let mask = 1; mask < 2 ** bitLength(shape[a] - 1); mask++) {
            next.push(prefix + (BigInt(mask) << BigInt(shifts[a])));
          }
        }
        partial = next;
      }
      masks.push(...partial);
    }
  }
  const flip = signFlip(epsilon);
  return [n, (cell, rng) => {
    const code = binaryCode(attributeCodes(cell, shape), everything, shape);
    const t = rng.belowNumber(masks.length);
    return 2 * t + (1 ^ parity(masks[t], code) ^ (flip(rng) ? 1 : 0));
  }];
}

function margPs(spec) {
  const [n, epsilon, shape, maxOrder] = marginalSpec(spec);
  const [sets, cells] = attributeSets(shape, maxOrder);
  const offsets = cells.map((_, i) => cells.slice(0, i).reduce((a, b) => a + b, 0));
  const oracles = new Map([...new Set(cells)].map((size) =>
    [size, makeRandomizedResponse(size, epsilon)]));
  return [n, (cell, rng) => {
    const s = rng.belowNumber(sets.length);
    const local = setCell(attributeCodes(cell, shape), sets[s], shape);
    return offsets[s] + oracles.get(cells[s])(local, rng);
  }];
}

function margRr(spec) {
  const [n, epsilon, shape, maxOrder] = marginalSpec(spec);
  const [sets, cells] = attributeSets(shape, maxOrder);
  // The set index in the bytes of the smallest unsigned type that holds it (1, 2, 4 or 8).
  const setBytes = [1, 2, 4, 8].find((size) => sets.length <= 256 ** size);
  const bitBytes = Math.ceil(Math.max(...cells) / 8);
  const oracles = new Map([...new Set(cells)].map((size) =>
    [size, makeUnary("rappor", size, epsilon)]));
  return [n, (cell, rng) => {
    const s = rng.belowNumber(sets.length);
    const local = setCell(attributeCodes(cell, shape), sets[s], shape);
    const bits = oracles.get(cells[s])(local, rng);
    const index = Array.from({ length: setBytes }, (_, i) => Math.floor(s / 256 ** i) % 256);
    return [...index, ...bits, ...new Array(bitBytes - bits.length).fill(0)];
  }];
}

function margHt(spec) {
  const [n, epsilon, shape, maxOrder] = marginalSpec(spec);
  const [sets] = attributeSets(shape, maxOrder);
  const coefficients = sets.map((members) =>
    2 ** members.reduce((sum, a) => sum + bitLength(shape[a] - 1), 0) - 1);
  const offsets = coefficients.map((_, i) => coefficients.slice(0, i).reduce((a, b) => a + b, 0));
  const flip = signFlip(epsilon);
  return [n, (cell, rng) => {
    const s = rng.belowNumber(sets.length);
    const code = binaryCode(attributeCodes(cell, shape), sets[s], shape);
    const alpha = 1 + rng.belowNumber(coefficients[s]);
    return 2 * (offsets[s] + alpha - 1) + (1 ^ parity(BigInt(alpha), code) ^ (flip(rng) ? 1 : 0));
  }];
}

/** The marginal kinds by kind name. */
export const MARGINAL_KINDS = {
  inp_rr: (spec) => {
    const [n, epsilon] = marginalSpec(spec);
    return [n, makeUnary("rappor", n, epsilon)];
  },
  inp_ps: (spec) => {
    const [n, epsilon] = marginalSpec(spec);
    return [n, makeRandomizedResponse(n, epsilon)];
  },
  inp_em: inpEm,
  inp_ht: inpHt,
  marg_rr: margRr,
  marg_ps: margPs,
  marg_ht: margHt,
};
