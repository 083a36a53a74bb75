// Exact random primitives on uniform bytes: every draw of the client goes through here.
// Bytes come from crypto.getRandomValues (the operating system's entropy in Node and in
// browsers); nothing uses Math.random or a floating-point comparison to decide an output.

const BUFFER_BYTES = 4096;
const TWO32 = 2 ** 32;

function cryptoFill(bytes) {
  const source = globalThis.crypto;
  if (!source || typeof source.getRandomValues !== "function") {
    throw new Error("no crypto.getRandomValues in this environment (Node >= 20 or a browser " +
      "is needed): the client draws only from the platform's cryptographic entropy.");
  }
  // getRandomValues fills at most 65536 bytes per call.
  for (let start = 0; start < bytes.length; start += 65536) {
    source.getRandomValues(bytes.subarray(start, Math.min(bytes.length, start + 65536)));
  }
}

/**
 * Uniform bits, exactly uniform integers below n (rejection) and exact dyadic Bernoulli bits.
 *
 * fill(Uint8Array) supplies uniform bytes: crypto.getRandomValues by default. Another
 * source is for tests only: whoever knows the bytes can undo the randomization.
 */
export class ExactRandom {
  constructor(fill = cryptoFill) {
    this.fill = fill;
    this.buffer = new Uint8Array(BUFFER_BYTES);
    this.position = BUFFER_BYTES;
  }

  /** One uniform byte (buffered, so that one record costs few entropy requests). */
  byte() {
    if (this.position === BUFFER_BYTES) {
      this.fill(this.buffer);
      this.position = 0;
    }
    return this.buffer[this.position++];
  }

  /** A uniform integer of `bits` bits (0 <= bits <= 53) as a Number. */
  bitsNumber(bits) {
    // The partial byte first (masked), then whole bytes: never more than `bits` bits held,
    // so every intermediate value is an exact Number.
    const partial = bits % 8;
    let value = partial ? this.byte() & ((1 << partial) - 1) : 0;
    for (let i = (bits - partial) / 8; i > 0; i--) value = value * 256 + this.byte();
    return value;
  }

  /** A uniform integer of `bits` bits as a BigInt. */
  bitsBigInt(bits) {
    let value = 0n;
    let have = 0;
    while (have < bits) {
      value = (value << 8n) | BigInt(this.byte());
      have += 8;
    }
    return value & ((1n << BigInt(bits)) - 1n);
  }

  /** A uniform 52-bit word (the dyadic Bernoulli bits' U). */
  word52() {
    return this.bitsNumber(52);
  }

  /** Bernoulli(numerator / 2^52), exactly: [U_52 < numerator] (numerator a Number <= 2^52). */
  bernoulli52(numerator) {
    return this.word52() < numerator;
  }

  /**
   * An exactly uniform integer in [0, n) by rejection: draws of bitLength(n - 1) bits until
   * one is below n (fewer than 2 draws on average). A Number n <= 2^32 gives a Number, a
   * BigInt n a BigInt.
   */
  below(n) {
    if (typeof n === "bigint") {
      if (n <= 0n) throw new RangeError(`below(n) needs n >= 1, got ${n}`);
      if (n === 1n) return 0n;
      const bits = (n - 1n).toString(2).length;
      for (;;) {
        const draw = this.bitsBigInt(bits);
        if (draw < n) return draw;
      }
    }
    if (!Number.isInteger(n) || n < 1 || n > TWO32) {
      throw new RangeError(`below(n) takes an integer Number n in [1, 2^32] or a BigInt, got ${n}`);
    }
    if (n === 1) return 0;
    const bits = 32 - Math.clz32(n - 1); // the bit length of n - 1 (< 2^32)
    for (;;) {
      const draw = this.bitsNumber(bits);
      if (draw < n) return draw;
    }
  }

  /** A uniform integer in [0, n) for a safe Number n (any size up to 2^53). */
  belowNumber(n) {
    return n <= TWO32 ? this.below(n) : Number(this.below(BigInt(n)));
  }
}
