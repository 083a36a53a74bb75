// The memoizing kinds: "longitudinal" (RAPPOR-style chaining), "dbitflip_pm", "1bitmean_pm"
// -- the Python client's longitudinal.py. Their permanent responses are derived from the
// device's secret through the keyed PRF of ./memo.js (never stored); the numerators come in
// the specification and are checked exactly.

import * as D from "./decimal.js";
import { ValueError, repr, shortRepr as short } from "./errors.js";
import { ONE, dyadicNumerator, keepNumerator, packed, ratioAtMost, within } from "./exact.js";
import { prf, prfBelow, prfBit, prfLanes } from "./memo.js";
import { checkValue } from "./numeric.js";
import { checkBudget, checkFields, isPlainObject } from "./spec.js";

const MAX_CELLS = 2 ** 24; // the Python client's (sklearn_ldp.deploy.limits' max_cells)
const LONGITUDINAL_PROTOCOLS = { l_grr: ["grr", "grr"], l_sue: ["sue", "sue"],
  l_oue: ["oue", "oue"], l_osue: ["oue", "sue"], l_soue: ["sue", "oue"] };

function checkCells(value, name, kind, minimum = 2) {
  if (typeof value !== "number" || !Number.isInteger(value) || value < minimum ||
      value > MAX_CELLS) {
    throw new ValueError(`${name} of the ${repr(kind)} specification must be an integer in ` +
      `[${minimum}, ${MAX_CELLS}], got ${repr(value)}.`);
  }
  return value;
}

function checkCell(value, k) {
  if (typeof value !== "number" || !Number.isInteger(value) || value < 0 || value >= k) {
    throw new ValueError(`the value must be a cell index, an integer in [0, ${k}), got ` +
      `${repr(value)}.`);
  }
  return value;
}

const withinBothWays = (a, b, epsilon) => within(a, b, epsilon) && within(b, a, epsilon);

/** [own, other, total] of one report (LongitudinalMechanism._report_weights), BigInts. */
function reportWeights(unary, k, n) {
  if (unary) {
    const [p1, q1, p2, q2] = [n.p_perm, n.q_perm, n.p_instant, n.q_instant];
    return [p1 * p2 + (ONE - p1) * q2, q1 * p2 + (ONE - q1) * q2, ONE * ONE];
  }
  const K = BigInt(k);
  const [keep1, keep2] = [n.keep_perm, n.keep_instant];
  const [move1, move2] = [ONE - keep1, ONE - keep2];
  const own = keep1 * keep2 * (K - 1n) ** 2n + move1 * move2 * (K - 1n);
  const other = (move1 * keep2 + keep1 * move2) * (K - 1n) + (K - 2n) * move1 * move2;
  return [own, other, (ONE * (K - 1n)) ** 2n];
}

/** The shipped numerators (BigInts), checked: integers in [0, 2^52] of the protocol's forms
 * ("sue": p = 2^52 - q; "oue": p = 2^51), the permanent step within epsilon_perm and one
 * report within epsilon_1, exactly on the integers. */
function longitudinalNumerators(spec, k, permanent, instant, epsilonPerm, epsilon1) {
  const kind = "longitudinal";
  const unary = permanent !== "grr";
  const names = unary ? ["p_perm", "q_perm", "p_instant", "q_instant"]
    : ["keep_perm", "keep_instant"];
  const shipped = spec.numerators;
  if (!isPlainObject(shipped) ||
      Object.keys(shipped).sort().join() !== [...names].sort().join()) {
    throw new ValueError(`numerators of the ${repr(kind)} specification must hold exactly ` +
      `${repr([...names].sort())}, got ${short(shipped)}.`);
  }
  const n = {};
  for (const name of names) {
    const value = shipped[name];
    if (typeof value !== "number" || !Number.isInteger(value) || value < 0 ||
        value > Number(ONE)) {
      throw new ValueError(`numerators.${name} of the ${repr(kind)} specification must be an ` +
        `integer in [0, 2^52], got ${repr(value)}.`);
    }
    n[name] = BigInt(value);
  }
  let permanentPair;
  if (unary) {
    for (const [step, suffix] of [[permanent, "perm"], [instant, "instant"]]) {
      const p = n[`p_${suffix}`];
      const expected = step === "sue" ? ONE - n[`q_${suffix}`] : ONE / 2n;
      if (p !== expected) {
        throw new ValueError(`numerators.p_${suffix} of the ${repr(kind)} specification is ` +
          `${p}, not ${expected} (the ${repr(step)} step's form).`);
      }
    }
    permanentPair = [n.p_perm * (ONE - n.q_perm), n.q_perm * (ONE - n.p_perm)];
  } else {
    const keep = n.keep_perm;
    if ((ONE - keep) % BigInt(k - 1) || keep === ONE) {
      throw new ValueError(`numerators.keep_perm of the ${repr(kind)} specification must ` +
        `leave a positive multiple of n_cells - 1 = ${k - 1} below 2^52 (every other value ` +
        `m / 2^52), got ${keep}.`);
    }
    permanentPair = [keep * BigInt(k - 1), ONE - keep];
  }
  if (!withinBothWays(...permanentPair, epsilonPerm)) {
    throw new ValueError(`numerators of the ${repr(kind)} specification make the permanent ` +
      `response exceed epsilon_perm=${repr(epsilonPerm)} (exact check): ${repr(shipped)}.`);
  }
  const [own, other, total] = reportWeights(unary, k, n);
  const reportPair = unary ? [own * (total - other), other * (total - own)] : [own, other];
  if (!withinBothWays(...reportPair, epsilon1)) {
    throw new ValueError(`numerators of the ${repr(kind)} specification make one report ` +
      `exceed epsilon_1=${repr(epsilon1)} (exact check): ${repr(shipped)}.`);
  }
  return n;
}

/** Options of a memoizing kind: privatize takes (value, rng, state); derive(value, secret)
 * is the report's PRF part (the parity tests compare it with the server's). */
const memoizing = (derive) => ({ takesValues: true, stateful: true, derive });

/**
 * LongitudinalMechanism (l_grr, l_sue, l_oue, l_osue, l_soue): a permanent response per value,
 * derived from the device's secret, and a fresh instantaneous randomization of it in every
 * report, with the server's shipped numerators.
 */
function longitudinal(spec) {
  const kind = "longitudinal";
  checkFields(spec, kind, ["n_cells", "epsilon_perm", "epsilon_1", "protocol", "numerators"]);
  const k = checkCells(spec.n_cells, "n_cells", kind);
  const epsilonPerm = checkBudget(spec.epsilon_perm, "epsilon_perm", kind);
  const epsilon1 = checkBudget(spec.epsilon_1, "epsilon_1", kind);
  if (!(epsilon1 < epsilonPerm)) {
    throw new ValueError("epsilon_1 of the 'longitudinal' specification must be below " +
      `epsilon_perm, got ${repr(epsilon1)} >= ${repr(epsilonPerm)}.`);
  }
  const protocols = Object.keys(LONGITUDINAL_PROTOCOLS).sort();
  const protocol = spec.protocol;
  if (typeof protocol !== "string" || !protocols.includes(protocol)) {
    throw new ValueError(`protocol of the ${repr(kind)} specification must be one of ` +
      `${repr(protocols)}, got ${repr(protocol)}.`);
  }
  const [permanent, instant] = LONGITUDINAL_PROTOCOLS[protocol];
  const unary = permanent !== "grr";
  const n = longitudinalNumerators(spec, k, permanent, instant, epsilonPerm, epsilon1);
  const nBytes = Math.ceil(k / 8);
  const share = unary ? null : (ONE - n.keep_perm) / BigInt(k - 1);
  const keepInstant = Number(n.keep_instant ?? 0n);
  const qInstant = Number(n.q_instant ?? 0n);

  const derive = (value, secret) => {
    if (!unary) {
      // One word (the server's permanent_response): its top 52 bits below (k - 1) m name
      // another value, m each; the others keep the value.
      const other = Number((prf(secret, "grr-perm", value, 0) >> 12n) / share);
      return other < k - 1 ? other + (other >= value ? 1 : 0) : value;
    }
    // The value's own bit with p_perm, every other bit with q_perm (bit-sliced lanes).
    const bits = prfLanes(secret, "ue-plane", value, k, n.q_perm, n.p_perm);
    const bytes = new Array(nBytes);
    for (let i = 0; i < nBytes; i++) bytes[i] = Number((bits >> BigInt(8 * i)) & 0xffn);
    return bytes;
  };

  const instantaneous = (response, rng) => {
    if (!unary) {
      if (rng.bernoulli52(keepInstant)) return response;
      const other = rng.below(k - 1); // exact: rejection on random bits
      return other + (other >= response ? 1 : 0);
    }
    const ones = [];
    for (let j = 0; j < k; j++) if (rng.bernoulli52(qInstant)) ones.push(j);
    const report = packed(ones, k);
    // "sue": a set permanent bit is 1 with 1 - q2 = p2 (XOR of the noise); "oue": a set
    // permanent bit becomes a fair coin (p2 = 1/2), as the server XORs one.
    if (instant === "sue") return report.map((r, i) => r ^ response[i]);
    return report.map((r, i) => r ^ (rng.byte() & response[i]));
  };

  const privatize = (value, rng, state) =>
    instantaneous(derive(checkCell(value, k), state.secret(rng)), rng);
  return [k, privatize, memoizing(derive)];
}

/** [own, other] over 2^52: other = 1 / (e^(eps/2) + 1) rounded up in 80-digit decimals,
 * own = 2^52 - other (DBitFlipPM), checked exactly. */
function dbitflipNumerators(epsilon) {
  const other = dyadicNumerator(D.divide(D.fromInt(1), D.add(D.exp(epsilon / 2), D.fromInt(1))),
    "up");
  const own = ONE - other;
  if (!withinBothWays(own, other, epsilon / 2)) {
    throw new ValueError(`epsilon=${repr(epsilon)} of the 'dbitflip_pm' specification cannot ` +
      "be realized at precision 2^-52.");
  }
  return [own, other];
}

/** DBitFlipPM: d buckets and one bit per bucket, memoized per value: both derived from the
 * device's secret, so an unchanged value repeats its report. */
function dbitflipPm(spec) {
  const kind = "dbitflip_pm";
  checkFields(spec, kind, ["n_cells", "epsilon", "n_sampled"]);
  const k = checkCells(spec.n_cells, "n_cells", kind);
  const epsilon = checkBudget(spec.epsilon, "epsilon", kind);
  const d = spec.n_sampled;
  if (typeof d !== "number" || !Number.isInteger(d) || d < 1 || d > k) {
    throw new ValueError(`n_sampled of the 'dbitflip_pm' specification must be an integer in ` +
      `[1, ${k}], got ${repr(d)}.`);
  }
  const [own, other] = dbitflipNumerators(epsilon);

  const buckets = (secret) => {
    // Floyd's algorithm on PRF words (the server's _derived_subsets).
    const chosen = [];
    for (let j = k - d; j < k; j++) {
      const t = prfBelow(secret, "dbf-bckt", j, j + 1);
      chosen.push(chosen.includes(t) ? j : t);
    }
    return chosen.sort((a, b) => a - b);
  };
  const derive = (value, secret) => {
    const sampled = buckets(secret);
    const bits = sampled.map((bucket, i) =>
      prfBit(secret, "dbf-bits", value, i, bucket === value ? own : other));
    return [...sampled, ...bits];
  };
  const privatize = (value, rng, state) => derive(checkCell(value, k), state.secret(rng));
  return [k, privatize, memoizing(derive)];
}

/**
 * OneBitMeanPM (Ding et al.'s 1BitMean with alpha-point rounding): the device's alpha and the
 * bit of every rounding point are derived from its secret; the bit probabilities are the
 * server's exact 2^-52 numerators.
 */
function oneBitMeanPm(spec) {
  const kind = "1bitmean_pm";
  checkFields(spec, kind, ["max_value", "epsilon", "n_segments"]);
  const m = spec.max_value;
  if (typeof m !== "number" || !Number.isFinite(m) || m <= 0) {
    throw new ValueError(`max_value of the ${repr(kind)} specification must be a finite ` +
      `number > 0, got ${repr(m)}.`);
  }
  const epsilon = checkBudget(spec.epsilon, "epsilon", kind);
  const s = spec.n_segments;
  if (typeof s !== "number" || !Number.isInteger(s) || s < 1 || s > 2 ** 20) {
    throw new ValueError(`n_segments of the ${repr(kind)} specification must be an integer ` +
      `in [1, 2^20], got ${repr(s)}.`);
  }
  // p_0 = 1 / (e^eps + 1) rounded up as the sketch's flip (2^52 minus the largest binary
  // keep numerator), p_s = 1 - p_0, the points between on the straight line.
  const low = ONE - keepNumerator(epsilon, 2);
  const high = ONE - low;
  const bound = D.exp(epsilon);
  if (!(ratioAtMost(high, low, bound) && ratioAtMost(ONE - low, ONE - high, bound))) {
    throw new ValueError(`epsilon=${repr(epsilon)} of the ${repr(kind)} specification cannot ` +
      "be realized at precision 2^-52.");
  }
  const S = BigInt(s);
  const numerator = (point) => low + (BigInt(point) * (high - low) + S / 2n) / S;

  const derive = (value, secret) => {
    const alpha = Number(prf(secret, "1bm-alph", 0, 0) >> 12n) / 2 ** 52; // exact: A / 2^52
    const scaled = value * (s / m);
    const lower = Math.min(Math.floor(scaled), s);
    const point = Math.min(lower + (scaled - lower + alpha >= 1.0 ? 1 : 0), s);
    return prfBit(secret, "1bm-bits", point, 0, numerator(point));
  };
  const privatize = (value, rng, state) =>
    derive(checkValue(value, [0.0, m], "the counter"), state.secret(rng));
  return [1, privatize, memoizing(derive)];
}

/** The memoizing kinds by specification name. */
export const LONGITUDINAL_KINDS = {
  longitudinal, dbitflip_pm: dbitflipPm, "1bitmean_pm": oneBitMeanPm };
