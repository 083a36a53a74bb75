// Heavy hitters on the device: PEM / TreeHist prefixes (the Python client's heavy_hitters.py,
// prefix_heavy_hitters). A report is [round, seed, y]: a uniform round, a 64-bit seed naming
// the round's linear hash (SplitMix64 rows, bit for bit the server's) and the randomized hash
// of the value's prefix.

import { ValueError, repr } from "./errors.js";
import {
  GOLDEN, MASK64, ONE, keepNumerator, mix64, packed, parity, within,
} from "./exact.js";
import { olhBuckets } from "./oracles.js";
import { bitLength as bitLengthOf, checkBudget, checkFields, checkInt } from "./spec.js";

const MAX_BIT_LENGTH = 1024;
const MAX_CANDIDATES = 2 ** 16;
const LENGTH_ROUND_FIRST = 2 ** 16; // heavy_hitters.prefix.LENGTH_ROUND_FIRST

/**
 * The value as the server's bit string (encode_values): a BigInt of W * 64 bits, word 0 most
 * significant, W = ceil(bitLength / 64). An integer (a safe Number or a BigInt) below
 * 2^bitLength sits at the top; a string is its UTF-8 bytes, zero padded. A string of up to
 * maxStringBytes bytes (default bitLength / 8) is truncated to bitLength / 8 bytes, as the
 * server's HeavyHitterMechanism.encode.
 */
export function bitString(value, bitLength, maxStringBytes = null) {
  const W = Math.ceil(bitLength / 64);
  const top = BigInt(W * 64);
  if ((typeof value === "number" && Number.isInteger(value)) || typeof value === "bigint") {
    const x = BigInt(value);
    if (x < 0n || x >= 1n << BigInt(bitLength)) {
      throw new ValueError(`the value ${repr(value)} is not in [0, 2^${bitLength}).`);
    }
    return x << (top - BigInt(bitLength));
  }
  if (typeof value !== "string") {
    throw new ValueError(`the value must be an integer or a string, got ${repr(value)}.`);
  }
  if (value.includes("\0")) { // the zero padding could not tell "a" and "a\0" apart
    throw new ValueError(`the value ${repr(value)} holds a NUL character, which the zero ` +
      "padding of the encoding cannot tell apart.");
  }
  if (!value.isWellFormed()) { // a lone surrogate has no UTF-8 encoding
    throw new ValueError(`the value ${repr(value)} is not a valid Unicode string (a lone ` +
      "surrogate): it has no UTF-8 encoding.");
  }
  const data = new TextEncoder().encode(value);
  if (bitLength % 8) {
    throw new ValueError(`string values need a bit_length that is a multiple of 8, got ` +
      `${bitLength}; the value ${repr(value)} cannot be encoded.`);
  }
  const cap = maxStringBytes ?? bitLength / 8;
  if (data.length > cap) {
    throw new ValueError(`the value ${repr(value)} takes ${data.length} bytes in UTF-8, more ` +
      `than the declared maximum of ${cap} bytes.`);
  }
  const kept = Math.min(data.length, bitLength / 8);
  let x = 0n;
  for (let i = 0; i < W * 8; i++) x = (x << 8n) | BigInt(i < kept ? data[i] : 0);
  return x;
}


/** heavy_hitters.prefix_schedule: the prefix length of every round. */
function prefixSchedule(bitLength, nCandidates, extensionBits) {
  // ceil(log2 n) is the bit length of n - 1.
  const first = Math.min(bitLength, Math.max(1, bitLengthOf(nCandidates - 1)) + extensionBits);
  const rest = bitLength - first;
  const steps = Math.ceil(rest / extensionBits);
  const lengths = [first];
  for (let i = 0; i < steps; i++) {
    lengths.push(lengths[lengths.length - 1] + Math.floor(rest / steps) +
      (i < rest % steps ? 1 : 0));
  }
  return lengths;
}

function prefixHeavyHitters(spec) {
  const kind = "prefix_heavy_hitters";
  checkFields(spec, kind, ["bit_length", "epsilon", "protocol", "n_candidates",
    "extension_bits"], ["max_string_bytes", "length_round"]);
  const L = spec.bit_length;
  if (typeof L !== "number" || !Number.isInteger(L) || L < 1 || L > MAX_BIT_LENGTH) {
    throw new ValueError(`bit_length of the ${repr(kind)} specification must be an integer ` +
      `in [1, ${MAX_BIT_LENGTH}], got ${repr(L)}.`);
  }
  const epsilon = checkBudget(spec.epsilon, "epsilon", kind);
  const protocol = spec.protocol;
  if (protocol !== "pem" && protocol !== "treehist") {
    throw new ValueError(`protocol of the ${repr(kind)} specification must be 'pem' or ` +
      `'treehist', got ${repr(protocol)}.`);
  }
  const nCandidates = checkInt(spec.n_candidates, `n_candidates of the ${repr(kind)} ` +
    "specification");
  const eta = checkInt(spec.extension_bits, `extension_bits of the ${repr(kind)} specification`);
  if (protocol === "treehist" && eta !== 1) {
    throw new ValueError(`extension_bits of a 'treehist' specification is 1, got ${repr(eta)}.`);
  }
  if (nCandidates > MAX_CANDIDATES || eta > 16 || nCandidates * 2 ** eta > MAX_CANDIDATES) {
    throw new ValueError(`n_candidates * 2^extension_bits of the ${repr(kind)} specification ` +
      `must be at most ${MAX_CANDIDATES}, got n_candidates=${nCandidates}, ` +
      `extension_bits=${eta}.`);
  }
  // The selection rounds, then the server's verification round of whole values.
  const cap = spec.max_string_bytes ?? null;
  if (cap !== null && (typeof cap !== "number" || !Number.isInteger(cap) || cap < Math.floor(L / 8)
      || cap > MAX_BIT_LENGTH / 8)) {
    throw new ValueError(`max_string_bytes of the ${repr(kind)} specification must be an ` +
      `integer in [${Math.floor(L / 8)}, ${MAX_BIT_LENGTH / 8}], got ${repr(cap)}.`);
  }
  const lengthCap = lengthRound(spec, kind, L, protocol, nCandidates, eta, cap);
  const lengths = [...prefixSchedule(L, nCandidates, eta), L];
  const W = Math.ceil(L / 64);
  const g = protocol === "pem" ? olhBuckets(epsilon, "linear") : 2; // best power of two
  const nRows = bitLengthOf(g) - 1;
  // The own bucket is kept when a 52-bit word is below the server's numerator.
  const keep = Number(keepNumerator(epsilon, g));
  const top = BigInt(W * 64);

  const ownHash = (seed, prefix, length) => {
    const mask = ((1n << BigInt(length)) - 1n) << (top - BigInt(length));
    let hashed = 0;
    for (let row = 0; row < nRows; row++) {
      // Row `row` is words row * W + 1 .. row * W + W of SplitMix64 from the seed.
      let bits = 0n;
      for (let w = 0; w < W; w++) {
        const step = BigInt(row * W + w + 1) * GOLDEN;
        bits = (bits << 64n) | mix64((seed + step) & MASK64);
      }
      hashed |= parity(bits & mask, prefix) << row;
    }
    return hashed;
  };

  const reportGivenSeed = (value, seed, rng) => {
    // The length round: the string's UTF-8 length.
    const x = bitString(lengthCap === null ? value : utf8Length(value, lengthCap), L, cap);
    const roundIndex = rng.belowNumber(lengths.length);
    const length = lengths[roundIndex];
    const prefix = x & (((1n << BigInt(length)) - 1n) << (top - BigInt(length)));
    const own = ownHash(seed, prefix, length);
    const kept = rng.bernoulli52(keep);
    let y;
    if (protocol === "pem") { // g-ary randomized response of the bucket
      let other = rng.belowNumber(g - 1);
      other += other >= own ? 1 : 0;
      y = kept ? own : other;
    } else {
      y = own ^ (kept ? 0 : 1);
    }
    return [(lengthCap === null ? 0 : LENGTH_ROUND_FIRST) + roundIndex, seed, y];
  };
  const privatize = (value, rng) => reportGivenSeed(value, rng.bitsBigInt(64), rng);
  // For the tests: the law given the seed (the seed itself is 64 uniform bits).
  privatize.reportGivenSeed = reportGivenSeed;
  return [null, privatize, { takesValues: true }];
}

/** The declared maximum of a length round's specification (length_round_spec), or null
 * for prefix rounds; a ValueError names a bad field. */
function lengthRound(spec, kind, L, protocol, nCandidates, eta, cap) {
  if (!("length_round" in spec)) return null;
  const round = spec.length_round;
  const keys = round !== null && typeof round === "object" && !Array.isArray(round)
    ? Object.keys(round).sort().join(",") : null;
  if (keys !== "first_round,max_string_bytes") {
    throw new ValueError(`length_round of the ${repr(kind)} specification must be an object ` +
      `with the fields first_round and max_string_bytes, got ${repr(round)}.`);
  }
  if (round.first_round !== LENGTH_ROUND_FIRST) {
    throw new ValueError(`length_round.first_round of the ${repr(kind)} specification must ` +
      `be ${LENGTH_ROUND_FIRST}, got ${repr(round.first_round)}.`);
  }
  const lengthCap = round.max_string_bytes;
  if (typeof lengthCap !== "number" || !Number.isInteger(lengthCap) || lengthCap < 1 ||
      lengthCap > 255) {
    throw new ValueError(`length_round.max_string_bytes of the ${repr(kind)} specification ` +
      `must be an integer in [1, 255], got ${repr(lengthCap)}.`);
  }
  // The length oracle of the server: one 8-bit round of PEM, then its verification round.
  if (L !== 8 || protocol !== "pem" || nCandidates !== 1 || eta !== 8 || cap !== null) {
    throw new ValueError(`a ${repr(kind)} specification with a length_round reports an 8-bit ` +
      "length through PEM (bit_length 8, protocol 'pem', n_candidates 1, extension_bits 8, " +
      `no max_string_bytes), got bit_length=${repr(L)}, protocol=${repr(protocol)}, ` +
      `n_candidates=${repr(nCandidates)}, extension_bits=${repr(eta)}, ` +
      `max_string_bytes=${repr(cap)}.`);
  }
  return lengthCap;
}

/** The length in bytes of a string's UTF-8 encoding, refused as bitString refuses it. */
function utf8Length(value, cap) {
  if (typeof value !== "string") {
    throw new ValueError("a length round's value is the string itself (its UTF-8 length is " +
      `reported), got ${repr(value)}.`);
  }
  bitString(value, 8 * cap); // the same checks as the prefix rounds' encoding
  return new TextEncoder().encode(value).length;
}

const MAX_SKETCH_WIDTH = 2 ** 20;
const MAX_SKETCH_HASHES = 2 ** 16;

/** heavy_hitters._fingerprints of one bit string of W words. */
export function fingerprint(x, W) {
  let state = 0n;
  for (let w = 0; w < W; w++) {
    const word = (x >> BigInt(64 * (W - 1 - w))) & MASK64;
    state = (mix64(state ^ word) + GOLDEN * BigInt(w + 1)) & MASK64;
  }
  return state;
}

function checkBitLength(value, name) {
  if (typeof value !== "number" || !Number.isInteger(value) || value < 1 ||
      value > MAX_BIT_LENGTH) {
    throw new ValueError(`${name} must be an integer in [1, ${MAX_BIT_LENGTH}], got ` +
      `${repr(value)}.`);
  }
  return value;
}

/** [bit string, W] of a sketch value: a plain value when the spec declares the bit length,
 * else a pair [value, bit_length] (which must agree with a declared one). */
function sketchWords(value, declared) {
  let item;
  let bitLength;
  if (Array.isArray(value) && value.length === 2) {
    [item, bitLength] = value;
    checkBitLength(bitLength, "the bit_length of the value");
    if (declared !== null && bitLength !== declared) {
      throw new ValueError(`the value's bit_length ${bitLength} is not the specification's ` +
        `${declared}.`);
    }
  } else if (declared !== null) {
    [item, bitLength] = [value, declared];
  } else {
    throw new ValueError("a 'sketch' value is a pair [value, bit_length] (the bit_length the " +
      `server passes to encode_values), got ${repr(value)}.`);
  }
  return [bitString(item, bitLength), Math.ceil(bitLength / 64)];
}

/** SketchFrequencyOracle._flip_numerator: f = 2^52 - a, a the largest keep numerator with
 * a / f <= e^eps' (eps' = eps / 2 for CMS), then the whole report's ratio checked. */
function sketchFlipNumerator(epsilon, hadamard) {
  const flip = ONE - keepNumerator(epsilon / (hadamard ? 1 : 2), 2);
  const power = hadamard ? 1n : 2n;
  if (!(flip > 0n && flip < ONE / 2n) || !within((ONE - flip) ** power, flip ** power, epsilon)) {
    throw new ValueError("epsilon of the 'sketch' specification gives the flip numerator " +
      `${flip}, whose ratio is not within e^${repr(epsilon)}.`);
  }
  return Number(flip); // < 2^51: exact
}

function sketch(spec) {
  const kind = "sketch";
  checkFields(spec, kind, ["epsilon", "n_hashes", "width", "hadamard", "hash_seed"],
    ["bit_length"]);
  const epsilon = checkBudget(spec.epsilon, "epsilon", kind);
  // client_spec() adds the values' bit length; without it every value is [value, bit_length].
  const declared = spec.bit_length ?? null;
  if (declared !== null) checkBitLength(declared, "bit_length of the 'sketch' specification");
  const k = spec.n_hashes;
  if (typeof k !== "number" || !Number.isInteger(k) || k < 1 || k > MAX_SKETCH_HASHES) {
    throw new ValueError(`n_hashes of the 'sketch' specification must be an integer in ` +
      `[1, ${MAX_SKETCH_HASHES}], got ${repr(k)}.`);
  }
  const m = spec.width;
  if (typeof m !== "number" || !Number.isInteger(m) || m < 2 || m > MAX_SKETCH_WIDTH) {
    throw new ValueError(`width of the 'sketch' specification must be an integer in ` +
      `[2, ${MAX_SKETCH_WIDTH}], got ${repr(m)}.`);
  }
  const hadamard = spec.hadamard;
  if (typeof hadamard !== "boolean") {
    throw new ValueError(`hadamard of the 'sketch' specification must be true or false, got ` +
      `${repr(hadamard)}.`);
  }
  if (hadamard && (m & (m - 1)) !== 0) {
    throw new ValueError(`width of an HCMS 'sketch' specification must be a power of two, ` +
      `got ${repr(m)}.`);
  }
  // A seed beyond 2^53 is exact only through Randomizer.fromJSON (a BigInt).
  const rawSeed = spec.hash_seed;
  const seedOk = typeof rawSeed === "bigint" ||
    (typeof rawSeed === "number" && Number.isSafeInteger(rawSeed));
  const hashSeed = seedOk ? BigInt(rawSeed) : -1n;
  if (hashSeed < 0n || hashSeed >= 2n ** 64n) {
    throw new ValueError(`hash_seed of the 'sketch' specification must be an integer in ` +
      `[0, 2^64), got ${repr(rawSeed)}` + (typeof rawSeed === "number" && rawSeed > 0 &&
      Number.isInteger(rawSeed) ? " (beyond 2^53 it is exact only when the JSON text is " +
      "read by Randomizer.fromJSON)." : "."));
  }
  const flipNumerator = sketchFlipNumerator(epsilon, hadamard);
  const salts = new Map();
  const position = (x, W, j) => {
    if (!salts.has(j)) salts.set(j, mix64((hashSeed + BigInt(j + 1) * GOLDEN) & MASK64));
    return Number((mix64(fingerprint(x, W) ^ salts.get(j))) % BigInt(m));
  };
  const privatize = (value, rng) => {
    const [x, W] = sketchWords(value, declared);
    const j = rng.belowNumber(k);
    const h = position(x, W, j);
    if (!hadamard) {
      const ones = [];
      for (let i = 0; i < m; i++) {
        // Every entry flipped with f / 2^52; the hashed one is the +1 entry before flipping.
        if (rng.bernoulli52(flipNumerator) !== (i === h)) ones.push(i);
      }
      // j in two big-endian bytes (j < 2^16), then the packed bits.
      return [j >> 8, j & 0xff, ...packed(ones, m)];
    }
    const coordinate = rng.belowNumber(m);
    const flip = rng.bernoulli52(flipNumerator);
    return [j, coordinate, ((parity(BigInt(coordinate), BigInt(h)) === 0) !== flip) ? 1 : 0];
  };
  privatize.position = position; // for the tests
  return [null, privatize, { takesValues: true }];
}

/** The heavy-hitter kinds by kind name. */
export const HEAVY_HITTER_KINDS = { prefix_heavy_hitters: prefixHeavyHitters, sketch };
