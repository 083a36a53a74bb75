// The memoizing kinds' device state: the SipHash-2-4 keyed PRF (bit for bit the server's
// sklearn_ldp.mechanisms._base.prf and the Python client's memo.py) and the storage that keeps
// the device's 128-bit secret. A permanent response is a function of the secret and the value,
// never stored: the same secret always gives the same responses.

import { ValueError, repr } from "./errors.js";
import { MASK64, ONE, PRECISION } from "./exact.js";

// The PRF's purposes: the message's first byte is the label's position + 1.
export const PURPOSES = ["grr-perm", "ue-plane", "dbf-bckt", "dbf-bits", "1bm-alph", "1bm-bits"];
const FIELD_LIMIT = 2 ** 24;
const GROUP_WORDS = 64; // the word of digit block b of lane group g has counter 64 g + b

const rotl = (x, r) => ((x << r) | (x >> (64n - r))) & MASK64;

function sipRounds(v, count) {
  let [v0, v1, v2, v3] = v;
  for (let i = 0; i < count; i++) {
    v0 = (v0 + v1) & MASK64;
    v1 = rotl(v1, 13n) ^ v0;
    v0 = rotl(v0, 32n);
    v2 = (v2 + v3) & MASK64;
    v3 = rotl(v3, 16n) ^ v2;
    v0 = (v0 + v3) & MASK64;
    v3 = rotl(v3, 21n) ^ v0;
    v2 = (v2 + v1) & MASK64;
    v1 = rotl(v1, 17n) ^ v2;
    v2 = rotl(v2, 32n);
  }
  return [v0, v1, v2, v3];
}

function littleEndian(bytes, start, end) {
  let word = 0n;
  for (let i = end - 1; i >= start; i--) word = (word << 8n) | BigInt(bytes[i]);
  return word;
}

/**
 * SipHash-2-4 (Aumasson and Bernstein 2012) of `message` (a Uint8Array) under the 16-byte
 * `key`: a 64-bit BigInt.
 */
export function siphash24(key, message) {
  const k0 = littleEndian(key, 0, 8);
  const k1 = littleEndian(key, 8, 16);
  let v = [k0 ^ 0x736f6d6570736575n, k1 ^ 0x646f72616e646f6dn,
    k0 ^ 0x6c7967656e657261n, k1 ^ 0x7465646279746573n];
  const tail = message.length - (message.length % 8);
  const blocks = [];
  for (let i = 0; i < tail; i += 8) blocks.push(littleEndian(message, i, i + 8));
  blocks.push(littleEndian(message, tail, message.length) |
    (BigInt(message.length & 0xff) << 56n));
  for (const block of blocks) {
    v[3] ^= block;
    v = sipRounds(v, 2);
    v[0] ^= block;
  }
  v[2] ^= 0xffn;
  v = sipRounds(v, 4);
  return v[0] ^ v[1] ^ v[2] ^ v[3];
}

/** The PRF word of (label, value, counter) under the 16-byte `secret`: SipHash-2-4 of the
 * 7-byte little-endian message tag | value << 8 | counter << 32 (value, counter < 2^24). */
export function prf(secret, label, value, counter) {
  if (!(Number.isInteger(value) && value >= 0 && value < FIELD_LIMIT &&
        Number.isInteger(counter) && counter >= 0 && counter < FIELD_LIMIT)) {
    throw new ValueError(`PRF values and counters must lie in [0, 2^24), got ${repr(value)}, ` +
      `${repr(counter)}.`);
  }
  const tag = PURPOSES.indexOf(label) + 1;
  const message = new Uint8Array([tag, value & 0xff, (value >>> 8) & 0xff, value >>> 16,
    counter & 0xff, (counter >>> 8) & 0xff, counter >>> 16]);
  return siphash24(secret, message);
}

/** 1 with probability numerator / 2^52 exactly: the top 52 bits of a PRF word below it. */
export function prfBit(secret, label, value, counter, numerator) {
  return (prf(secret, label, value, counter) >> 12n) < BigInt(numerator) ? 1 : 0;
}

/** A uniform integer in [0, high): the first PRF word (counters 0, 1, ...) at or above
 * 2^64 mod high, reduced modulo high (the server's prf_uniform_below). */
export function prfBelow(secret, label, value, high) {
  const modulus = BigInt(high);
  const limit = (1n << 64n) % modulus;
  for (let counter = 0; ; counter++) {
    const word = prf(secret, label, value, counter);
    if (word >= limit) return Number(word % modulus);
  }
}

/**
 * nBits independent bits (a BigInt, bit j for value j), each 1 with probability
 * numerator / 2^52 (bit `value` with ownNumerator): the server's bit-sliced
 * prf_bernoulli_lanes. Digit t of lane j of group g is bit (t mod P) L + j of the word of
 * counter 64 g + floor(t / P), L the power of two at least the group's width, P = 64 / L; a
 * lane's digits are compared with its numerator's, top digit first, until they differ.
 */
export function prfLanes(secret, label, value, nBits, numerator, ownNumerator = numerator) {
  const other = BigInt(numerator);
  const own = BigInt(ownNumerator);
  let bits = 0n;
  for (let group = 0; group < Math.ceil(nBits / 64); group++) {
    const width = Math.min(64, nBits - 64 * group);
    const valid = (1n << BigInt(width)) - 1n;
    const offset = value - 64 * group;
    const ownBit = offset >= 0 && offset < width ? 1n << BigInt(offset) : 0n;
    let result = 0n;
    let undecided = 0n;
    for (const [lanes, a] of [[valid & ~ownBit, other], [ownBit, own]]) {
      if (a === ONE) result |= lanes; // probability 1: no digits to compare
      else undecided |= lanes;
    }
    const laneBits = width === 1 ? 1 : 2 ** (width - 1).toString(2).length;
    const perWord = 64 / laneBits;
    let stored = 0n;
    for (let t = 0; t < PRECISION && undecided; t++) {
      if (t % perWord === 0) {
        stored = prf(secret, label, value, GROUP_WORDS * group + Math.floor(t / perWord));
      }
      const word = stored >> BigInt((t % perWord) * laneBits);
      const place = BigInt(PRECISION - 1 - t);
      // The numerators' digit t, lane by lane (the own lane's may differ).
      let digit = (other >> place) & 1n ? valid : 0n;
      digit = (own >> place) & 1n ? digit | ownBit : digit & ~ownBit;
      const decided = undecided & (word ^ digit);
      result |= decided & digit;
      undecided &= ~decided;
    }
    bits |= result << BigInt(64 * group);
  }
  return bits;
}

// ---------------------------------------------------------------------- storage

/** Device state in memory (tests, or a page that keeps no state across loads). */
export class MemoryStorage {
  constructor() {
    this._items = new Map();
  }

  get(key) {
    return this._items.has(key) ? this._items.get(key) : null;
  }

  set(key, text) {
    this._items.set(key, String(text));
  }
}

/** Device state in the browser's localStorage (or another Web Storage object). */
export class LocalStorage {
  constructor(storage = globalThis.localStorage) {
    if (!storage || typeof storage.getItem !== "function" ||
        typeof storage.setItem !== "function") {
      throw new ValueError("LocalStorage needs a Web Storage object (window.localStorage); " +
        "this environment has none: use MemoryStorage or another storage with get/set.");
    }
    this._storage = storage;
  }

  get(key) {
    return this._storage.getItem(key);
  }

  set(key, text) {
    this._storage.setItem(key, text);
  }
}

export const STATE_FORMAT = "sklearn_ldp.client_state";
export const STATE_VERSION = 3; // the Python client's: one-block PRF messages
export const DEFAULT_STATE_KEY = "sklearn-ldp-client-state";

/** JSON text with sorted keys (the specification a state is bound to). */
function canonical(value) {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (value !== null && typeof value === "object") {
    return `{${Object.keys(value).sort().map((k) => `${JSON.stringify(k)}:${canonical(value[k])}`)
      .join(",")}}`;
  }
  return typeof value === "bigint" ? value.toString() : JSON.stringify(value);
}

const hex = (bytes) => Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");

/**
 * The device's secret under one key of a storage ({get(key), set(key, text)}): created on
 * first use, then read back on every report. The stored text is JSON with the format, the
 * kind, the specification it belongs to and {"secret": 32 hex digits}. A damaged entry, an
 * entry of another specification, or an entry that disappeared after this client used it is
 * a ValueError: the client never draws a new secret in its place (a new secret means new
 * permanent responses, and averaging them reveals the value).
 */
export class SecretState {
  constructor(storage, key, spec) {
    if (!storage || typeof storage.get !== "function" || typeof storage.set !== "function") {
      throw new ValueError(`state must be a storage with get(key) and set(key, text) ` +
        `(MemoryStorage, LocalStorage), got ${repr(storage)}.`);
    }
    if (typeof key !== "string" || !key) {
      throw new ValueError(`stateKey must be a non-empty string, got ${repr(key)}.`);
    }
    this.storage = storage;
    this.key = key;
    this.kind = spec.mechanism;
    this.spec = canonical(spec);
    this._seen = false;
  }

  /** The 16-byte secret (a Uint8Array), created from `rng` and saved on first use. */
  secret(rng) {
    let text = this.load();
    if (text === null) {
      const fresh = new Uint8Array(16).map(() => rng.byte());
      const content = { format: STATE_FORMAT, version: STATE_VERSION, kind: this.kind,
        spec: this.spec, state: { secret: hex(fresh) } };
      this.storage.set(this.key, JSON.stringify(content));
      this._seen = true;
      text = content.state.secret;
    }
    return Uint8Array.from(text.match(/../g), (pair) => parseInt(pair, 16));
  }

  /** The stored secret's hex digits, or null before first use. */
  load() {
    const where = `the client state ${repr(this.key)}`;
    const raw = this.storage.get(this.key);
    if (raw === null || raw === undefined) {
      if (this._seen) {
        throw new ValueError(`${where} disappeared after this client used it; refusing to ` +
          "draw a new secret (restore it: a new secret means new permanent responses).");
      }
      return null;
    }
    let content;
    try {
      content = JSON.parse(raw);
    } catch {
      throw new ValueError(`${where} is not valid JSON (truncated or edited); refusing to ` +
        "draw a new secret.");
    }
    const fields = ["format", "kind", "spec", "state", "version"];
    if (content === null || typeof content !== "object" || Array.isArray(content) ||
        Object.keys(content).sort().join() !== fields.join()) {
      throw new ValueError(`${where} is not a client state (fields must be ${repr(fields)}).`);
    }
    if (content.format !== STATE_FORMAT || content.version !== STATE_VERSION) {
      throw new ValueError(`${where} has format ${repr(content.format)} version ` +
        `${repr(content.version)}; this client writes ${repr(STATE_FORMAT)} version ` +
        `${STATE_VERSION}.`);
    }
    if (content.spec !== this.spec || content.kind !== this.kind) {
      throw new ValueError(`${where} belongs to another specification (kind ` +
        `${repr(content.kind)}); use one state key per specification.`);
    }
    const state = content.state;
    const secret = state?.secret;
    if (state === null || typeof state !== "object" || Object.keys(state).join() !== "secret" ||
        typeof secret !== "string" || !/^[0-9a-f]{32}$/.test(secret)) {
      throw new ValueError(`${where} holds an invalid state: 'secret' must be 32 lowercase ` +
        "hex digits (128 bits).");
    }
    this._seen = true;
    return secret;
  }
}
