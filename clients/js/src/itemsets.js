// Frequent itemsets (itemsets, SVSM's itemset round) -- the Python client's itemsets.py. The
// specification lists the declared items, the cap on a set's size and the candidate itemsets
// (arrays of item labels); a device checks its set, lists the indices of the candidates its set
// contains, and reports that list through the set_items specification the spec carries
// (padding, one position drawn exactly uniformly, the frequency oracle). Hostile specifications
// (an item or a candidate listed twice, a candidate with an unknown item, of fewer than 2 or
// more than max_set_size items, a set_items part not over exactly the candidates) are refused
// with the Python client's messages.

import { ValueError, repr, shortRepr } from "./errors.js";
import { SET_VALUED_KINDS } from "./set_valued.js";
import { checkInt, isPlainObject, specField } from "./spec.js";

const KIND = "itemsets";
// sklearn_ldp.mechanisms.set_valued.padding.MAX_SET_SIZE
const MAX_SET_SIZE = 4096;

/** A JSON label's key: its type and value, as the Python client tells labels apart; null for
 * what is no label (an object or an array). */
function labelOf(label) {
  if (label === null || ["string", "number", "boolean"].includes(typeof label)) {
    return `${label === null ? "null" : typeof label}:${String(label)}`;
  }
  return null;
}

function itemsets(spec) {
  const params = specField(spec, "params", KIND);
  const names = isPlainObject(params) ? Object.keys(params) : [];
  if (!isPlainObject(params) || names.length !== 3 ||
      !["items", "max_set_size", "candidates"].every((key) => names.includes(key))) {
    throw new ValueError(`malformed params of the ${repr(KIND)} specification: ` +
      `${shortRepr(params)}.`);
  }
  const { items, candidates: listed } = params;
  const cap = checkInt(params.max_set_size, `max_set_size of ${repr(KIND)}`);
  if (cap > MAX_SET_SIZE) {
    throw new ValueError(`max_set_size of ${repr(KIND)} is at most ${MAX_SET_SIZE}, got ` +
      `${cap}.`);
  }
  if (!Array.isArray(items) || items.length < 2) {
    throw new ValueError(`items of the ${repr(KIND)} specification must list at least 2 ` +
      "labels.");
  }
  const index = new Map();
  items.forEach((label, code) => {
    const key = labelOf(label);
    if (key === null) {
      throw new ValueError(`items of the ${repr(KIND)} specification must be strings, ` +
        `numbers, booleans or null, got ${repr(label)}.`);
    }
    if (index.has(key)) {
      throw new ValueError(`the ${repr(KIND)} specification: the item ${repr(label)} is ` +
        "listed twice in items.");
    }
    index.set(key, code);
  });
  if (!Array.isArray(listed) || listed.length === 0) {
    throw new ValueError(`candidates of the ${repr(KIND)} specification must be a non-empty ` +
      "list.");
  }
  const seen = new Set();
  const candidates = listed.map((itemset) => {
    if (!Array.isArray(itemset) || itemset.length < 2 || itemset.length > cap) {
      throw new ValueError(`the candidate ${repr(itemset).slice(0, 60)} of the ${repr(KIND)} ` +
        `specification must list 2 to max_set_size=${cap} items.`);
    }
    const codes = itemset.map((label) => {
      const code = index.get(labelOf(label));
      if (code === undefined) {
        throw new ValueError(`the candidate ${repr(itemset)} holds the item ${repr(label)}, ` +
          "not among the declared items.");
      }
      return code;
    }).sort((x, y) => x - y);
    if (codes.some((code, i) => i > 0 && code === codes[i - 1])) {
      throw new ValueError(`the candidate ${repr(itemset)} lists an item twice.`);
    }
    const key = codes.join(",");
    if (seen.has(key)) throw new ValueError(`the candidate ${repr(itemset)} is listed twice.`);
    seen.add(key);
    return codes;
  });
  const n = candidates.length;
  const inner = specField(spec, "set_items", KIND);
  if (!isPlainObject(inner) || inner.mechanism !== "set_items" || inner.n_inputs !== n ||
      spec.n_inputs !== n || inner.epsilon !== spec.epsilon || !isPlainObject(inner.params) ||
      (inner.params.items ?? null) !== null || inner.params.max_set_size !== n) {
    throw new ValueError(`the 'set_items' part of the ${repr(KIND)} specification must be over ` +
      `its ${n} candidates (n_inputs and max_set_size), without labels, at its epsilon.`);
  }
  const [, report] = SET_VALUED_KINDS.set_items({ ...inner });

  /** The indices of the candidates the record (an array or a Set of items) contains. */
  const encode = (value) => {
    if (!Array.isArray(value) && !(value instanceof Set)) {
      throw new ValueError(`a set-valued record is a set or list of items, got ${repr(value)}.`);
    }
    const held = new Set();
    for (const label of value) {
      const code = index.get(labelOf(label));
      if (code === undefined) {
        throw new ValueError(`the item ${repr(label)} is not among the declared items.`);
      }
      if (held.has(code)) {
        throw new ValueError(`the item ${repr(label)} is listed twice; a set holds each item ` +
          "once.");
      }
      held.add(code);
    }
    if (held.size > cap) {
      throw new ValueError(`the set holds ${held.size} items, more than max_set_size=${cap} ` +
        "(never truncated).");
    }
    const contained = [];
    candidates.forEach((codes, j) => {
      if (codes.every((code) => held.has(code))) contained.push(j);
    });
    return contained;
  };
  const privatize = (value, rng) => report(encode(value), rng);
  if (report.reportGivenSeed) {
    // Local hashing: the report given its seed (the law tests).
    privatize.reportGivenSeed = (value, seed, rng) =>
      report.reportGivenSeed(encode(value), seed, rng);
  }
  return [n, privatize, { takesValues: true, encode }];
}

/** The itemset kind by name. */
export const ITEMSET_KINDS = { itemsets };
