// The multi_range kind: TDG / HDG records of several numbers for range queries -- the Python
// client's multi_range.py: a uniform group, the record's cell in that group's grid (the same
// double arithmetic as the server), then OLH's [seed, bucket] of the cell (linear hash family,
// the server's integer weights).

import { ValueError, repr, shortRepr } from "./errors.js";
import { checkValue } from "./numeric.js";
import { makeLocalHashing, olhBuckets } from "./oracles.js";
import { common, isPlainObject } from "./spec.js";

// The server's caps (mechanisms/multi_range/grids.py).
const MAX_G1 = 2 ** 12;
const MAX_G2 = 2 ** 8;
const MAX_RANGE_ATTRIBUTES = 64;
const KIND = "multi_range";

function checkGrid(value, name, cap) {
  if (typeof value !== "number" || !Number.isInteger(value) || value < 2 || value > cap ||
      (value & (value - 1)) !== 0) {
    throw new ValueError(`params[${repr(name)}] of the ${repr(KIND)} specification must be a ` +
      `power of two in [2, ${cap}], got ${repr(value)}.`);
  }
  return value;
}

function checkPair(pair, j) {
  const name = `params['bounds'][${j}]`;
  if (!Array.isArray(pair) || pair.length !== 2 ||
      !pair.every((x) => typeof x === "number" && Number.isFinite(x)) || !(pair[0] < pair[1])) {
    throw new ValueError(`${name} of the ${repr(KIND)} specification must be a pair [low, ` +
      `high] of finite numbers with low < high, got ${shortRepr(pair)}.`);
  }
  return [pair[0], pair[1]];
}

export function multiRange(spec) {
  const [nInputs, epsilon, params] = common(spec, ["method", "bounds", "g1", "g2", "columns"]);
  const method = params.method ?? "hdg";
  if (method !== "hdg" && method !== "tdg") {
    throw new ValueError(`params['method'] of the ${repr(KIND)} specification must be 'hdg' ` +
      `or 'tdg', got ${repr(method)}.`);
  }
  const pairs = params.bounds;
  if (!Array.isArray(pairs) || pairs.length < 2 || pairs.length > MAX_RANGE_ATTRIBUTES) {
    throw new ValueError(`params['bounds'] of the ${repr(KIND)} specification must be a list ` +
      `of 2 to ${MAX_RANGE_ATTRIBUTES} pairs, got ${shortRepr(pairs)}.`);
  }
  const bounds = pairs.map(checkPair);
  const d = bounds.length;
  const columns = params.columns ?? bounds.map((_, i) => `x${i}`);
  if (!Array.isArray(columns) || columns.length !== d || new Set(columns).size !== d ||
      columns.some((c) => typeof c !== "string")) {
    throw new ValueError(`params['columns'] of the ${repr(KIND)} specification must be ${d} ` +
      `distinct names, got ${shortRepr(columns)}.`);
  }
  const g2 = checkGrid(params.g2 ?? 8, "g2", MAX_G2);
  let resolution = g2;
  if (method === "tdg") {
    if (params.g1 !== undefined && params.g1 !== null) {
      throw new ValueError(`params['g1'] of a 'tdg' ${repr(KIND)} specification must be null.`);
    }
  } else {
    resolution = checkGrid(params.g1 ?? 8 * g2, "g1", MAX_G1);
    if (resolution < g2) {
      throw new ValueError(`params['g1'] of the ${repr(KIND)} specification must be at least ` +
        `g2=${g2}, got ${resolution}.`);
    }
  }
  const groups = method === "hdg" ? bounds.map((_, a) => [a]) : [];
  for (let a = 0; a < d; a++) for (let b = a + 1; b < d; b++) groups.push([a, b]);
  const buckets = olhBuckets(epsilon, "linear");
  const oracle2d = makeLocalHashing(g2 * g2, epsilon, buckets, "linear");
  const oracle1d = method === "hdg" ? makeLocalHashing(resolution, epsilon, buckets, "linear")
    : null;
  const cells = groups.reduce((n, g) => n + (g.length === 1 ? resolution : g2 * g2), 0);
  if (nInputs !== cells) {
    throw new ValueError(`n_inputs of the ${repr(KIND)} specification must be ${cells} (the ` +
      `cells of its grids), got ${nInputs}.`);
  }
  const step = resolution / g2;

  const codes = (record) => {
    let values = record;
    if (isPlainObject(record)) {
      const missing = columns.filter((c) => !Object.hasOwn(record, c));
      if (missing.length) {
        throw new ValueError(`the record has no value of ${repr(missing[0])} (columns: ` +
          `${repr(columns)}).`);
      }
      values = columns.map((c) => record[c]);
    }
    if (!Array.isArray(values) || values.length !== d) {
      throw new ValueError(`a ${repr(KIND)} record is an object of ${repr(columns)} or a list ` +
        `of ${d} numbers, got ${repr(record)}.`);
    }
    return values.map((value, j) => {
      const [low, high] = bounds[j];
      const number = checkValue(value, bounds[j], repr(columns[j]));
      // The server's arithmetic, in its order: floor((v - lo) * r / (hi - lo)).
      return Math.min(Math.floor((number - low) * resolution / (high - low)), resolution - 1);
    });
  };

  const privatize = (value, rng) => {
    const code = codes(value);
    const group = rng.belowNumber(groups.length);
    const attributes = groups[group];
    if (attributes.length === 1) return [group, ...oracle1d(code[attributes[0]], rng)];
    const [a, b] = attributes;
    const cell = Math.floor(code[a] / step) * g2 + Math.floor(code[b] / step);
    return [group, ...oracle2d(cell, rng)];
  };
  return [d, privatize, { takesValues: true }];
}

/** The multi-dimensional range kind. */
export const MULTI_RANGE_KINDS = { multi_range: multiRange };
