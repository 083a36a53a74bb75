// Set-valued (set_items, SVIM) and key-value (pckv_grr, pckv_ue: PCKV) records -- the Python
// client's set_valued.py and key_value.py. A record of s items (pairs) is padded with the
// dummies d + s .. d + L - 1 to the pad length L, one position in [0, max(s, L)) is drawn
// exactly uniformly (rejection on random bits), and the element there is reported: through the
// specification's frequency oracle (set_items), or as a key-value pair perturbed with the
// specification's integer weights, checked exactly against e^eps (pckv_grr: one key and sign;
// pckv_ue: packed +1 bits then -1 bits of every key).

import { ValueError, repr, shortRepr } from "./errors.js";
import { ONE, exactBound, ratioAtMost, ratioDraw, packed } from "./exact.js";
import { ORACLE_KINDS } from "./oracles.js";
import { checkBudget, checkInt, isPlainObject, specField } from "./spec.js";

// sklearn_ldp.mechanisms.set_valued.padding.MAX_SET_SIZE
const MAX_SET_SIZE = 4096;
const MAX_VALUE_STEPS = 2 ** 30;
const SET_ORACLES = ["randomized_response", "olh"];
const TOTAL = 2n ** 62n;

/** The params object of `kind`'s spec with exactly the `keys`, or the Python client's refusal. */
function exactParams(spec, kind, keys) {
  const params = specField(spec, "params", kind);
  const names = isPlainObject(params) ? Object.keys(params) : [];
  if (!isPlainObject(params) || names.length !== keys.length ||
      !keys.every((key) => names.includes(key))) {
    throw new ValueError(`malformed params of the ${repr(kind)} specification: ` +
      `${shortRepr(params)}.`);
  }
  return params;
}

/** The padded element of a sorted record of `size` entries: [index in the record, or null
 * for the dummy], drawn uniformly over max(size, L) positions. */
function padPosition(rng, size, pad) {
  const position = rng.belowNumber(Math.max(size, pad));
  return position < size ? [position, null] : [null, position];
}

/** Refuse a record longer than the cap (never truncated). */
function checkSize(size, cap, what) {
  if (size > cap) {
    throw new ValueError(`the ${what} holds ${size} ${what === "set" ? "items" : "pairs"}, ` +
      `more than max_set_size=${cap} (never truncated).`);
  }
}

/** A JSON label's key: its type and value (Python indexes labels by (type, label)). */
function labelKey(label) {
  if (label === null || ["string", "number", "boolean"].includes(typeof label)) {
    return `${label === null ? "null" : typeof label}:${String(label)}`;
  }
  return null;
}

function setItems(spec) {
  const kind = "set_items";
  const params = exactParams(spec, kind, ["pad_length", "oracle", "max_set_size", "items"]);
  const nItems = checkInt(specField(spec, "n_inputs", kind), `n_inputs of ${repr(kind)}`);
  const pad = checkInt(params.pad_length, `pad_length of ${repr(kind)}`);
  const cap = checkInt(params.max_set_size, `max_set_size of ${repr(kind)}`);
  if (pad > MAX_SET_SIZE || cap > MAX_SET_SIZE) {
    throw new ValueError(`pad_length and max_set_size of ${repr(kind)} are at most ` +
      `${MAX_SET_SIZE}, got ${pad} and ${cap}.`);
  }
  const oracle = specField(spec, "oracle", kind);
  if (!isPlainObject(oracle) || !SET_ORACLES.includes(oracle.mechanism) ||
      oracle.n_inputs !== nItems + pad || oracle.epsilon !== spec.epsilon) {
    throw new ValueError(`the oracle of the ${repr(kind)} specification must be one of ` +
      `('randomized_response', 'olh') over n_inputs + pad_length = ${nItems + pad} values ` +
      `at the same epsilon, got ${shortRepr(oracle)}.`);
  }
  const [, privatizeValue] = ORACLE_KINDS[oracle.mechanism]({ ...oracle });
  const labels = params.items;
  let index = null;
  if (labels !== null) {
    if (!Array.isArray(labels) || labels.length !== nItems) {
      throw new ValueError(`items of the ${repr(kind)} specification must list ${nItems} ` +
        "labels.");
    }
    index = new Map(labels.map((label, code) => [labelKey(label), code]));
    if (index.has(null) || index.size !== nItems) {
      // JSON objects and arrays are no labels; 1 and 1.0 are one Number here.
      throw new ValueError(`items of the ${repr(kind)} specification must be ${nItems} ` +
        "distinct strings, numbers, booleans or null (as the JavaScript client tells them " +
        `apart), got ${shortRepr(labels)}.`);
    }
  }

  const codeOf = (item) => {
    if (index === null) {
      if (typeof item !== "number" || !Number.isInteger(item) || item < 0 || item >= nItems) {
        throw new ValueError(`the item ${repr(item)} is not an item code in [0, ${nItems}).`);
      }
      return item;
    }
    const code = index.get(labelKey(item));
    if (code === undefined) {
      throw new ValueError(`the item ${repr(item)} is not among the declared items.`);
    }
    return code;
  };

  /** The sorted item codes of a record (an array or a Set of items), or a refusal. */
  const encode = (value) => {
    if (!Array.isArray(value) && !(value instanceof Set)) {
      throw new ValueError(`a set-valued record is a set or list of items, got ${repr(value)}.`);
    }
    const codes = [...value].map(codeOf).sort((x, y) => x - y);
    checkSize(codes.length, cap, "set");
    for (let i = 1; i < codes.length; i++) {
      if (codes[i] === codes[i - 1]) {
        throw new ValueError(`the item ${repr(index === null ? codes[i] : labels[codes[i]])} ` +
          "is listed twice; a set holds each item once.");
      }
    }
    return codes;
  };

  /** The padded set's element drawn for the report (a value of the oracle's domain). */
  const element = (value, rng) => {
    const codes = encode(value);
    const [at, position] = padPosition(rng, codes.length, pad);
    return at === null ? nItems + position : codes[at];
  };
  const privatize = (value, rng) => privatizeValue(element(value, rng), rng);
  if (privatizeValue.reportGivenSeed) {
    // Local hashing: the report given its seed (the law tests).
    privatize.reportGivenSeed = (value, seed, rng) =>
      privatizeValue.reportGivenSeed(element(value, rng), seed, rng);
  }
  return [nItems, privatize, { takesValues: true, encode }];
}

/** A JSON integer (a safe Number or an exact BigInt) as a BigInt, or null. */
function integerOf(value) {
  if (typeof value === "bigint") return value;
  return typeof value === "number" && Number.isSafeInteger(value) ? BigInt(value) : null;
}

// The longest key label (characters), as the Python client's.
const MAX_LABEL_LENGTH = 256;

/** A label's JSON text, at most 60 characters (the Python client's message, character for
 * character). */
function jsonText(value) {
  return (JSON.stringify(value) ?? String(value)).slice(0, 60);
}

/** codeOf(key): a record key's code, by its label when the specification lists labels
 * (distinct strings or integers, checked here), else an integer code. */
function keyCodes(labels, nKeys, kind) {
  if (labels === null) {
    return (key) => {
      if (typeof key !== "number" || !Number.isInteger(key) || key < 0 || key >= nKeys) {
        throw new ValueError(`the key ${repr(key)} is not a key in [0, ${nKeys}).`);
      }
      return key;
    };
  }
  if (!Array.isArray(labels) || labels.length !== nKeys) {
    throw new ValueError(`keys of the ${repr(kind)} specification must list ${nKeys} labels, ` +
      `got ${jsonText(labels)}.`);
  }
  const index = new Map();
  labels.forEach((label, code) => {
    const isString = typeof label === "string" && label.length <= MAX_LABEL_LENGTH;
    if (!isString && !(typeof label === "number" && Number.isSafeInteger(label))) {
      throw new ValueError(`a key label of the ${repr(kind)} specification is a string of at ` +
        `most ${MAX_LABEL_LENGTH} characters or an integer, got ${jsonText(label)}.`);
    }
    if (index.has(labelKey(label))) {
      throw new ValueError(`the key label ${repr(label)} of the ${repr(kind)} specification ` +
        "is listed twice.");
    }
    index.set(labelKey(label), code);
  });
  return (key) => {
    const code = index.get(labelKey(key));
    if (code === undefined) {
      throw new ValueError(`the key ${repr(key)} is not among the declared keys.`);
    }
    return code;
  };
}

/** The checked fields of a key-value specification (pckv_grr: 4 weights, pckv_ue: 3) and
 * encode(record): its sorted [key code, j] pairs (value = j / value_steps), or a refusal. */
function keyValueCommon(spec, kind, nWeights) {
  const params = exactParams(spec, kind, ["pad_length", "value_steps", "max_set_size", "keys"]);
  const epsilon = checkBudget(specField(spec, "epsilon", kind), "epsilon", kind);
  const nKeys = checkInt(specField(spec, "n_inputs", kind), `n_inputs of ${repr(kind)}`);
  const pad = checkInt(params.pad_length, `pad_length of ${repr(kind)}`);
  const cap = checkInt(params.max_set_size, `max_set_size of ${repr(kind)}`);
  const steps = checkInt(params.value_steps, `value_steps of ${repr(kind)}`);
  if (pad > MAX_SET_SIZE || cap > MAX_SET_SIZE || steps > MAX_VALUE_STEPS) {
    throw new ValueError(`pad_length, max_set_size (at most ${MAX_SET_SIZE}) or value_steps ` +
      `(at most ${MAX_VALUE_STEPS}) of ${repr(kind)} too large.`);
  }
  const raw = specField(spec, "weights", kind);
  const weights = Array.isArray(raw) ? raw.map(integerOf) : [];
  if (weights.length !== nWeights || weights.some((w) => w === null || w < 1n || w >= TOTAL)) {
    // Beyond 2^53 a Number is what JSON.parse rounded: only Randomizer.fromJSON reads it.
    const rounded = Array.isArray(raw) && raw.some((w) => typeof w === "number" &&
      Number.isInteger(w) && !Number.isSafeInteger(w));
    throw new ValueError(`weights of the ${repr(kind)} specification must be ${nWeights} ` +
      `positive integers below 2^62, got ${shortRepr(raw)}` + (rounded ? " (beyond 2^53 " +
      "they are exact only when the JSON text is read by Randomizer.fromJSON)." : "."));
  }
  const codeOf = keyCodes(params.keys, nKeys, kind);

  const encode = (value) => {
    const pairs = value instanceof Map ? [...value.entries()] : value;
    if (!Array.isArray(pairs)) {
      throw new ValueError("a key-value record is a Map key -> value or an array of " +
        `[key, value] pairs, got ${repr(value)}.`);
    }
    checkSize(pairs.length, cap, "record");
    const seen = new Set();
    const parsed = pairs.map((pair) => {
      if (!Array.isArray(pair) || pair.length !== 2) {
        throw new ValueError(`a pair is [key, value], got ${repr(pair)}.`);
      }
      const [label, number] = pair;
      const key = codeOf(label);
      if (seen.has(key)) throw new ValueError(`the key ${repr(label)} is listed twice.`);
      seen.add(key);
      if (typeof number !== "number" || !Number.isFinite(number) || number < -1 ||
          number > 1) {
        throw new ValueError(`the value ${repr(number)} of key ${repr(label)} is not a number ` +
          "in [-1, 1].");
      }
      const scaled = number * steps;
      if (Math.abs(scaled - Math.round(scaled)) > 1e-6) {
        throw new ValueError(`the value ${repr(number)} of key ${repr(label)} is not on the ` +
          `lattice j / ${steps}.`);
      }
      return [key, Math.round(scaled)];
    });
    return parsed.sort((x, y) => x[0] - y[0]);
  };

  /** The padded-and-sampled pair of a record: [key code, v* = +1], exactly. */
  const sampledPair = (value, rng) => {
    const pairs = encode(value);
    const [at, position] = padPosition(rng, pairs.length, pad);
    const [key, j] = at === null ? [nKeys + position, 0] : pairs[at];
    return [key, rng.below(2 * steps) < steps + j]; // P(+1) = (1 + v) / 2 exactly
  };
  return { epsilon, nKeys, pad, raw, weights, encode, sampledPair };
}

function pckvGrr(spec) {
  const kind = "pckv_grr";
  const { epsilon, nKeys, pad, raw, weights, encode, sampledPair } =
    keyValueCommon(spec, kind, 4);
  const [a, d, keep, flip] = weights;
  const nValues = nKeys + pad;
  // The three output weights: the pair kept with its sign, kept with the sign flipped, and
  // any pair of another key; every ratio at most e^eps, decided on integers.
  const outputs = [2n * a * keep, 2n * a * flip, d * (keep + flip)];
  const largest = outputs.reduce((x, y) => (x > y ? x : y));
  const smallest = outputs.reduce((x, y) => (x < y ? x : y));
  if (a + BigInt(nValues - 1) * d > TOTAL || keep + flip > TOTAL || !(a > d && keep > flip) ||
      !ratioAtMost(largest, smallest, exactBound(epsilon))) {
    throw new ValueError(`the weights of the ${repr(kind)} specification ${repr(raw)} are ` +
      `not ${repr(epsilon)}-LDP (or carry no information): refused.`);
  }

  const privatize = (value, rng) => {
    const [key, positive] = sampledPair(value, rng);
    const [kept, other] = ratioDraw(rng, 1, nValues - 1, a, d);
    if (kept) {
      const [same] = ratioDraw(rng, 1, 1, keep, flip);
      return 2 * key + (positive === same ? 1 : 0);
    }
    return 2 * (other + (other >= key ? 1 : 0)) + rng.below(2);
  };
  return [nKeys, privatize, { takesValues: true, encode }];
}

function pckvUe(spec) {
  const kind = "pckv_ue";
  const { epsilon, nKeys, pad, raw, weights, encode, sampledPair } =
    keyValueCommon(spec, kind, 3);
  const [keep, flip, qBig] = weights;
  const bound = exactBound(epsilon);
  // b_k / b_f and the held key's entry against a fake one: 2 b_k (2^52 - q) / ((b_k + b_f) q),
  // each at most e^eps, decided on integers.
  if (!(keep > flip && 2n * qBig < ONE && keep + flip <= TOTAL) ||
      !ratioAtMost(keep, flip, bound) ||
      !ratioAtMost(2n * keep * (ONE - qBig), (keep + flip) * qBig, bound)) {
    throw new ValueError(`the weights of the ${repr(kind)} specification ${repr(raw)} are ` +
      `not ${repr(epsilon)}-LDP (or carry no information): refused.`);
  }
  const nValues = nKeys + pad;
  const q = Number(qBig); // < 2^52: an exact Number

  const privatize = (value, rng) => {
    const [key, positive] = sampledPair(value, rng);
    const plus = [];
    const minus = [];
    // Every other entry: non-zero with q / 2^52, its sign a uniform bit.
    for (let i = 0; i < nValues; i++) {
      if (rng.bernoulli52(q) && i !== key) (rng.below(2) ? plus : minus).push(i);
    }
    // The held key's entry: non-zero with probability 1/2, its sign v* kept with b.
    if (rng.below(2)) {
      const [kept] = ratioDraw(rng, 1, 1, keep, flip);
      (positive === kept ? plus : minus).push(key);
    }
    return [...packed(plus.sort((x, y) => x - y), nValues),
      ...packed(minus.sort((x, y) => x - y), nValues)];
  };
  return [nKeys, privatize, { takesValues: true, encode }];
}

/** The set-valued and key-value kinds by name. */
export const SET_VALUED_KINDS = { set_items: setItems, pckv_grr: pckvGrr, pckv_ue: pckvUe };
