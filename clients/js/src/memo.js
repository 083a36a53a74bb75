// The memoizing kinds' device state: the SipHash-2-4 keyed PRF (bit for bit the server's
// sklearn_ldp.mechanisms._base.prf and the Python client's memo.py) and the storage that keeps
// the device's 128-bit secret. A permanent response is a function of the secret and the value,
// never stored: the same secret always gives the same responses.

import { ValueError, repr } from "./errors.js";
import { ONE, PRECISION } from "./exact.js";

// The PRF's purposes: the message's first byte is the label's position + 1.
export const PURPOSES = ["grr-perm", "ue-plane", "dbf-bckt", "dbf-bits", "1bm-alph", "1bm-bits",
  "rap-chrt", "rap-perm"];
const FIELD_LIMIT = 2 ** 24;
const GROUP_WORDS = 64; // the word of digit block b of lane group g has counter 64 g + b

// SipHash's state as eight 32-bit halves (v0 high, v0 low, ..., v3 low): on Numbers rather than
// BigInts, about thirty times faster, so that a large unary report stays well under a
// millisecond. A Uint32Array stores every result modulo 2^32.
const state = new Uint32Array(8);
const [V0, V1, V2, V3] = [0, 2, 4, 6];

function add(a, b) { // v_a += v_b (mod 2^64)
  const low = state[a + 1] + state[b + 1];
  state[a] = state[a] + state[b] + (low > 0xffffffff ? 1 : 0);
  state[a + 1] = low;
}

function rotateXor(a, r, b) { // v_a = rotl(v_a, r) ^ v_b, 0 < r < 32
  const high = state[a];
  const low = state[a + 1];
  state[a] = ((high << r) | (low >>> (32 - r))) ^ state[b];
  state[a + 1] = ((low << r) | (high >>> (32 - r))) ^ state[b + 1];
}

function swapHalves(a) { // v_a = rotl(v_a, 32)
  const high = state[a];
  state[a] = state[a + 1];
  state[a + 1] = high;
}

function sipRounds(count) {
  for (let i = 0; i < count; i++) {
    add(V0, V1);
    rotateXor(V1, 13, V0);
    swapHalves(V0);
    add(V2, V3);
    rotateXor(V3, 16, V2);
    add(V0, V3);
    rotateXor(V3, 21, V0);
    add(V2, V1);
    rotateXor(V1, 17, V2);
    swapHalves(V2);
  }
}

const word32 = (bytes, at) =>
  (bytes[at] | (bytes[at + 1] << 8) | (bytes[at + 2] << 16) | (bytes[at + 3] << 24)) >>> 0;

/** SipHash-2-4 under the 16-byte `key` of a message given as its 64-bit little-endian blocks
 * [high, low] (the last holding the trailing bytes and the length in its top byte). */
function siphashBlocks(key, blocks) {
  const [k0h, k0l, k1h, k1l] = [word32(key, 4), word32(key, 0), word32(key, 12), word32(key, 8)];
  state.set([k0h ^ 0x736f6d65, k0l ^ 0x70736575, k1h ^ 0x646f7261, k1l ^ 0x6e646f6d,
    k0h ^ 0x6c796765, k0l ^ 0x6e657261, k1h ^ 0x74656462, k1l ^ 0x79746573]);
  for (const [high, low] of blocks) {
    state[V3] ^= high;
    state[V3 + 1] ^= low;
    sipRounds(2);
    state[V0] ^= high;
    state[V0 + 1] ^= low;
  }
  state[V2 + 1] ^= 0xff;
  sipRounds(4);
  const high = (state[V0] ^ state[V1] ^ state[V2] ^ state[V3]) >>> 0;
  const low = (state[V0 + 1] ^ state[V1 + 1] ^ state[V2 + 1] ^ state[V3 + 1]) >>> 0;
  return (BigInt(high) << 32n) | BigInt(low);
}

/**
 * SipHash-2-4 (Aumasson and Bernstein 2012) of `message` (a Uint8Array) under the 16-byte
 * `key`: a 64-bit BigInt.
 */
export function siphash24(key, message) {
  const padded = new Uint8Array(message.length - (message.length % 8) + 8);
  padded.set(message);
  padded[padded.length - 1] = message.length & 0xff;
  const blocks = [];
  for (let at = 0; at < padded.length; at += 8) {
    blocks.push([word32(padded, at + 4), word32(padded, at)]);
  }
  return siphashBlocks(key, blocks);
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
  // One block: bytes tag, value (3), counter (3), then the length 7 in the top byte.
  return siphashBlocks(secret, [[(counter | (7 << 24)) >>> 0, (tag | (value << 8)) >>> 0]]);
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
