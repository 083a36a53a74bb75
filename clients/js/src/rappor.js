// RAPPOR on strings ("bloom_rappor") -- the Python client's rappor.py, bit for bit the server's
// sklearn_ldp.mechanisms.heavy_hitters.rappor. The cohort and the permanent randomized
// response are derived from the device's secret through the keyed PRF of ./memo.js; the
// instantaneous response is fresh in every report; both epsilons are checked exactly.

import * as D from "./decimal.js";
import { ValueError, repr } from "./errors.js";
import { GOLDEN, MASK64, ONE, dyadicNumerator, mix64, packed, within } from "./exact.js";
import { bitString, fingerprint } from "./heavy_hitters.js";
import { prf, prfBelow, prfLanes } from "./memo.js";
import { checkBudget, checkFields, isPlainObject } from "./spec.js";

const KIND = "bloom_rappor";
const FIELDS = ["n_bits", "n_hashes", "n_cohorts", "f", "p", "q", "max_string_bytes",
  "hash_seed"];
const CAPS = { n_bits: [1, 4096], n_hashes: [1, 16], n_cohorts: [1, 2 ** 16],
  max_string_bytes: [1, 128] };
const FIELD_LIMIT = 2 ** 24;
const COIN_COUNTER = 2 ** 20; // rappor.COIN_COUNTER: the PRF counters of the permanent coins

function checkParams(spec) {
  const params = spec.params;
  if (!isPlainObject(params) || Object.keys(params).sort().join() !== [...FIELDS].sort().join()) {
    throw new ValueError(`params of the ${repr(KIND)} specification must have exactly the ` +
      `fields ${repr(FIELDS)}, got ${repr(params)}.`);
  }
  for (const [name, [low, high]] of Object.entries(CAPS)) {
    const value = params[name];
    if (typeof value !== "number" || !Number.isInteger(value) || value < low || value > high) {
      throw new ValueError(`params.${name} of the ${repr(KIND)} specification must be an ` +
        `integer in [${low}, ${high}], got ${repr(value)}.`);
    }
  }
  const seed = params.hash_seed;
  if (!((typeof seed === "number" && Number.isSafeInteger(seed) && seed >= 0) ||
        (typeof seed === "bigint" && seed >= 0n && seed < 2n ** 64n))) {
    throw new ValueError(`params.hash_seed of the ${repr(KIND)} specification must be an ` +
      `integer in [0, 2^64), got ${repr(seed)}.`);
  }
  for (const name of ["f", "p", "q"]) {
    const value = params[name];
    if (typeof value !== "number" || !(value >= 0 && value <= 1)) {
      throw new ValueError(`params.${name} of the ${repr(KIND)} specification must be a ` +
        `probability, got ${repr(value)}.`);
    }
  }
  const [k, h, m] = [params.n_bits, params.n_hashes, params.n_cohorts];
  if (k ** h > FIELD_LIMIT || k * m > FIELD_LIMIT) {
    throw new ValueError(`the ${repr(KIND)} specification's n_bits ** n_hashes and n_bits * ` +
      `n_cohorts must be at most 2^24, got ${k}, ${h}, ${m}.`);
  }
  if (!(params.f > 0 && params.f < 1) || !(params.p < params.q)) {
    throw new ValueError(`the ${repr(KIND)} specification needs 0 < f < 1 and p < q, got ` +
      `f=${repr(params.f)}, p=${repr(params.p)}, q=${repr(params.q)}.`);
  }
  return params;
}

/** RapporMechanism: report [cohort >> 8, cohort & 255, packed bits...]. */
function bloomRappor(spec) {
  checkFields(spec, KIND, ["epsilon", "n_inputs", "params", "epsilon_inf"]);
  const params = checkParams(spec);
  const [k, h, m] = [params.n_bits, params.n_hashes, params.n_cohorts];
  const halfF = dyadicNumerator(D.fromFloat(params.f / 2), "up");
  const pNum = dyadicNumerator(D.fromFloat(params.p), "up");
  const qNum = dyadicNumerator(D.fromFloat(params.q), "down");
  const keep = ONE - halfF;
  const one2 = ONE * ONE;
  const Q1 = keep * qNum + halfF * pNum;
  const Q0 = halfF * qNum + keep * pNum;
  const H = BigInt(h);
  // The claimed epsilons must hold for the integers drawn with, exactly (as the server's).
  for (const [name, numerator, denominator] of [
    ["epsilon", (Q1 * (one2 - Q0)) ** H, (Q0 * (one2 - Q1)) ** H],
    ["epsilon_inf", keep ** (2n * H), halfF ** (2n * H)]]) {
    const claimed = checkBudget(spec[name], name, KIND);
    if (!within(numerator, denominator, claimed)) {
      throw new ValueError(`${name} of the ${repr(KIND)} specification (${repr(claimed)}) is ` +
        "not within the privacy loss its parameters realize: refused.");
    }
  }
  const bitLength = 8 * params.max_string_bytes;
  const W = Math.ceil(bitLength / 64);
  const hashSeed = BigInt(params.hash_seed);
  const K = BigInt(k);
  const [pDraw, qDraw] = [Number(pNum), Number(qNum)]; // below 2^53: exact Numbers

  /** The sorted Bloom bits of value in cohort (the server's bloom_positions). */
  const positions = (value, cohort) => {
    const print = fingerprint(bitString(value, bitLength), W);
    const out = [];
    for (let j = 0; j < h; j++) {
      const salt = mix64((hashSeed + BigInt(cohort * h + j + 1) * GOLDEN) & MASK64);
      out.push(Number(mix64(print ^ salt) % K));
    }
    return out.sort((a, b) => a - b);
  };

  /** [cohort, permanent bits as a BigInt], derived from the secret. */
  const derive = (value, secret) => {
    if (typeof value !== "string") {
      throw new ValueError(`a ${repr(KIND)} value is a string, got ${repr(value)}.`);
    }
    const cohort = prfBelow(secret, "rap-chrt", 0, m);
    const bits = positions(value, cohort);
    let code = 0;
    let bloom = 0n;
    bits.forEach((position, i) => {
      code += position * k ** i;
      bloom |= 1n << BigInt(position);
    });
    // Each bit replaced with probability f (lanes) by a coin (the bits of the words of
    // counters 2^20 + g, group g of 64 bits), as the server's permanent_words.
    const replaced = prfLanes(secret, "rap-perm", code, k, 2n * halfF);
    let coins = 0n;
    for (let group = 0; group < Math.ceil(k / 64); group++) {
      coins |= prf(secret, "rap-perm", code, COIN_COUNTER + group) << BigInt(64 * group);
    }
    coins &= (1n << K) - 1n;
    return [cohort, (replaced & coins) | (bloom & ~replaced)];
  };

  const privatize = (value, rng, state) => {
    const [cohort, bits] = derive(value, state.secret(rng));
    const ones = [];
    for (let i = 0; i < k; i++) {
      // 1 with q where the permanent bit is set, p where it is clear (fresh exact bits).
      if (rng.bernoulli52((bits >> BigInt(i)) & 1n ? qDraw : pDraw)) ones.push(i);
    }
    return [cohort >> 8, cohort & 0xff, ...packed(ones, k)];
  };
  return [null, privatize, { takesValues: true, stateful: true, derive }];
}

/** The RAPPOR kind by specification name. */
export const RAPPOR_KINDS = { bloom_rappor: bloomRappor };
