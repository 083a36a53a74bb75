// Reading a specification: format versions and field checks, with the Python client's
// messages (_spec.py), so that a malformed or edited specification is refused naming the field.

import { ValueError, repr } from "./errors.js";

export const SPEC_VERSION = 1;
// The server's smallest epsilon (sklearn_ldp._validation.MIN_EPSILON).
export const MIN_BUDGET = 1e-6;
// Kinds whose specification format has its own version (the others read SPEC_VERSION).
export const KIND_SPEC_VERSIONS = {
  factorization: 2,
  duchi: 2,
  piecewise: 2,
  hybrid: 2,
  square_wave: 2,
  sampled_mean: 2,
  longitudinal: 3,
  gaussian: 2,
  gaussian_pure: 2,
  // Prefix heavy hitters: a verification round of whole values since version 2.
  prefix_heavy_hitters: 2,
};
// Cell counts this client takes: JSON numbers are doubles in JavaScript, exact up to 2^53,
// and the largest kinds report up to 8 n outputs; larger domains are the Python client's.
export const MAX_INPUTS = 2 ** 48;

/** The specification version this client reads for `kind`. */
export function specVersion(kind) {
  return typeof kind === "string" && Object.hasOwn(KIND_SPEC_VERSIONS, kind)
    ? KIND_SPEC_VERSIONS[kind] : SPEC_VERSION;
}

export function isPlainObject(value) {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

export function specField(spec, key, kind) {
  if (!Object.hasOwn(spec, key)) {
    throw new ValueError(`the ${repr(kind)} specification has no ${repr(key)} field: it was ` +
      "not written by mechanism.to_json() of a compatible sklearn_ldp.");
  }
  return spec[key];
}

/**
 * An integer >= minimum (and <= MAX_INPUTS). JSON gives no integer type in JavaScript: 4.0
 * and 4 parse alike, so an integral double is taken as the integer (the Python client refuses
 * "4.0"); anything else is refused naming the field.
 */
export function checkInt(value, name, minimum = 1) {
  if (typeof value !== "number" || !Number.isInteger(value) || value < minimum) {
    throw new ValueError(`${name} must be an integer >= ${minimum}, got ${repr(value)}.`);
  }
  if (value > MAX_INPUTS) {
    throw new ValueError(`${name} must be at most 2^48 in the JavaScript client, got ` +
      `${repr(value)}; use the Python client (sklearn_ldp.deploy.client) for larger domains.`);
  }
  return value;
}

/** An epsilon-like field in (0, 50] (the server's check_epsilon). */
export function checkBudget(value, name, kind) {
  if (typeof value !== "number") {
    throw new ValueError(`${name} of the ${repr(kind)} specification must be a number, got ` +
      `${repr(value)}.`);
  }
  if (!Number.isFinite(value) || !(value > 0 && value <= 50)) {
    throw new ValueError(`${name} of the ${repr(kind)} specification must lie in (0, 50], ` +
      `got ${repr(value)}.`);
  }
  if (value < MIN_BUDGET) {
    // The server refuses these too: e^eps - 1 vanishes, and layouts derived from e^eps
    // (Hadamard response's blocks) would be empty.
    throw new ValueError(`${name} of the ${repr(kind)} specification is too small to be ` +
      `meaningful, got ${repr(value)}; the smallest is 1e-06.`);
  }
  return value;
}

/**
 * [nInputs, epsilon, params] of a spec, refusing parameters this client does not know (a
 * newer server may have added one that changes the randomizer).
 */
export function common(spec, allowed = []) {
  const kind = spec.mechanism;
  const nInputs = checkInt(specField(spec, "n_inputs", kind), "n_inputs");
  const epsilon = checkBudget(specField(spec, "epsilon", kind), "epsilon", kind);
  const raw = spec.params ?? {};
  if (!isPlainObject(raw)) {
    throw new ValueError(`params of the ${repr(kind)} specification must be an object, got ` +
      `${repr(raw)}.`);
  }
  const unknown = Object.keys(raw).filter((key) => !allowed.includes(key)).sort();
  if (unknown.length) {
    throw new ValueError(`the ${repr(kind)} specification has parameters ${repr(unknown)} ` +
      `that this client does not know (it knows ${repr([...allowed].sort())}); update the ` +
      "client.");
  }
  return [nInputs, epsilon, { ...raw }];
}

/**
 * Refuse missing and unknown top-level fields (a newer server's field may change the
 * randomizer): the Python client's _check_fields.
 */
export function checkFields(spec, kind, required, optional = []) {
  const missing = required.filter((key) => !Object.hasOwn(spec, key));
  if (missing.length) {
    throw new ValueError(`the ${repr(kind)} specification has no ${repr(missing[0])} field: ` +
      "it was not written by to_dict() of a compatible sklearn_ldp.");
  }
  const known = new Set([...required, ...optional, "version", "mechanism"]);
  const unknown = Object.keys(spec).filter((key) => !known.has(key)).sort();
  if (unknown.length) {
    throw new ValueError(`the ${repr(kind)} specification has fields ${repr(unknown)} that ` +
      "this client does not know; update the client.");
  }
}

/** The number of bits of a non-negative safe integer (Python's int.bit_length). */
export function bitLength(n) {
  return n === 0 ? 0 : n.toString(2).length;
}
