// 80-significant-digit decimal arithmetic on BigInt, as Python's
// decimal.Context(prec=80) computes it (ROUND_HALF_EVEN): the Python client derives every
// integer of a law (dyadic numerators, two-weight laws, ratio checks) with that context, and
// this module lets the JavaScript client derive the same integers and take the same decisions.
//
// A decimal is {c, e}: the value c * 10^e, c a BigInt (negative only in intermediate sums;
// floor and ceiling are taken of positive values only). Operations round their exact result to 80
// significant digits; exp and sqrt are computed with 60 guard digits and then rounded, which
// is the correctly rounded result unless the exact value lies within 10^-140 (relative) of a
// rounding boundary.

export const PRECISION_DIGITS = 80;
const GUARD_DIGITS = 140; // fixed-point digits of exp before rounding to 80

const TEN = 10n;
const pow10Cache = new Map();

/** 10^k as a BigInt (k >= 0). */
export function pow10(k) {
  let value = pow10Cache.get(k);
  if (value === undefined) {
    value = TEN ** BigInt(k);
    pow10Cache.set(k, value);
  }
  return value;
}

function digitCount(c) {
  return c === 0n ? 1 : (c < 0n ? -c : c).toString().length;
}

/** The exact decimal of a non-negative integer (BigInt or safe Number). */
export function fromInt(n) {
  return { c: BigInt(n), e: 0 };
}

/** The exact decimal of a finite double >= 0 (a double m 2^k is m 5^-k 10^k for k < 0). */
export function fromFloat(x) {
  if (!(Number.isFinite(x) && x >= 0)) {
    throw new RangeError(`fromFloat needs a finite number >= 0, got ${x}`);
  }
  if (x === 0) return { c: 0n, e: 0 };
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, x);
  const bits = view.getBigUint64(0);
  const biased = Number((bits >> 52n) & 0x7ffn);
  let mantissa = bits & ((1n << 52n) - 1n);
  let exponent;
  if (biased === 0) {
    exponent = -1074; // subnormal
  } else {
    mantissa |= 1n << 52n;
    exponent = biased - 1075;
  }
  if (exponent >= 0) return { c: mantissa << BigInt(exponent), e: 0 };
  return { c: mantissa * 5n ** BigInt(-exponent), e: exponent };
}

/** Round c 10^e to 80 significant digits; sticky: the exact value is a bit above c 10^e in
 * magnitude. Negative values round half even by magnitude (floor and ceiling: positives). */
function round(c, e, mode = "half_even", sticky = false) {
  if (c < 0n) {
    if (mode !== "half_even") throw new RangeError("directed rounding of a negative value");
    const rounded = round(-c, e, mode, sticky);
    return { c: -rounded.c, e: rounded.e };
  }
  const drop = digitCount(c) - PRECISION_DIGITS;
  if (drop <= 0) {
    if (sticky) {
      // Callers pass sticky only with guard digits (at least 82): never reached.
      throw new Error("internal: sticky rounding needs guard digits");
    }
    return { c, e };
  }
  const unit = pow10(drop);
  let q = c / unit;
  const r = c % unit;
  const inexact = r !== 0n || sticky;
  if (mode === "floor") {
    // nothing: truncation of a positive value
  } else if (mode === "ceiling") {
    if (inexact) q += 1n;
  } else {
    const twice = 2n * r;
    if (twice > unit || (twice === unit && (sticky || q % 2n === 1n))) q += 1n;
  }
  return normalize(q, e + drop);
}

// A carry may give 81 digits (999.. + 1): drop the trailing zero.
function normalize(c, e) {
  if (digitCount(c) > PRECISION_DIGITS) return { c: c / 10n, e: e + 1 };
  return { c, e };
}

/** a * b rounded to 80 digits (Context.multiply). */
export function multiply(a, b) {
  return round(a.c * b.c, a.e + b.e);
}

/** a + b rounded to 80 digits (Context.add). */
export function add(a, b) {
  const e = Math.min(a.e, b.e);
  return round(a.c * pow10(a.e - e) + b.c * pow10(b.e - e), e);
}

/** a - b rounded to 80 digits (Context.subtract). */
export function subtract(a, b) {
  return add(a, { c: -b.c, e: b.e });
}

/** a / b rounded to 80 digits (Context.divide). */
export function divide(a, b) {
  if (b.c === 0n) throw new RangeError("division by zero");
  if (a.c === 0n) return { c: 0n, e: 0 };
  if (a.c < 0n !== b.c < 0n) {
    const q = divide({ c: a.c < 0n ? -a.c : a.c, e: a.e }, { c: b.c < 0n ? -b.c : b.c, e: b.e });
    return { c: -q.c, e: q.e };
  }
  if (a.c < 0n) return divide({ c: -a.c, e: a.e }, { c: -b.c, e: b.e });
  // Scale the numerator so that the integer quotient has at least 82 digits.
  const shift = Math.max(0, PRECISION_DIGITS + 2 - (digitCount(a.c) - digitCount(b.c)));
  const numerator = a.c * pow10(shift);
  const q = numerator / b.c;
  const r = numerator % b.c;
  return round(q, a.e - b.e - shift, "half_even", r !== 0n);
}

/** Whether a <= b (exact comparison of the values). */
export function lessEqual(a, b) {
  const e = Math.min(a.e, b.e);
  return a.c * pow10(a.e - e) <= b.c * pow10(b.e - e);
}

/** The integer floor, ceiling or half-even rounding of a value a >= 0 (to_integral_value
 * with ROUND_FLOOR, ROUND_CEILING, ROUND_HALF_EVEN). */
export function toIntegral(a, mode) {
  if (a.c < 0n) throw new RangeError("toIntegral takes values >= 0");
  if (a.e >= 0) return a.c * pow10(a.e);
  const unit = pow10(-a.e);
  const q = a.c / unit;
  const r = a.c % unit;
  if (mode === "ceiling") return r !== 0n ? q + 1n : q;
  if (mode === "half_even") return 2n * r > unit || (2n * r === unit && q % 2n === 1n) ? q + 1n : q;
  return q;
}

function isqrt(n) {
  if (n < 2n) return n;
  let x = 1n << BigInt(Math.ceil(n.toString(2).length / 2));
  for (;;) {
    const y = (x + n / x) >> 1n;
    if (y >= x) return x;
    x = y;
  }
}

/** The square root of a, correctly rounded to 80 digits (Decimal.sqrt). */
export function sqrt(a) {
  if (a.c === 0n) return { c: 0n, e: 0 };
  // Scale to an even exponent with at least 2 * 82 digits, so the root has >= 82 digits.
  let shift = Math.max(0, 2 * (PRECISION_DIGITS + 2) - digitCount(a.c));
  if ((a.e - shift) % 2 !== 0) shift += 1;
  const scaled = a.c * pow10(shift);
  const root = isqrt(scaled);
  return round(root, (a.e - shift) / 2, "half_even", root * root !== scaled);
}

const expCache = new Map();

/** e^x for a double x in [0, 50], rounded to 80 digits (Context.exp: correctly rounded,
 * ROUND_HALF_EVEN, up to the guard digits described above). */
export function exp(x) {
  let cached = expCache.get(x);
  if (cached !== undefined) return cached;
  if (!(Number.isFinite(x) && x >= 0 && x <= 64)) {
    throw new RangeError(`exp is implemented on [0, 64], got ${x}`);
  }
  const scale = pow10(GUARD_DIGITS);
  const d = fromFloat(x);
  // x in fixed point (truncated at 10^-140 when x has more decimals).
  const fixed = d.e >= -GUARD_DIGITS ? d.c * pow10(d.e + GUARD_DIGITS)
    : d.c / pow10(-d.e - GUARD_DIGITS);
  // Taylor series sum x^n / n! in fixed point: terms are positive, each truncated by at most
  // one unit, about 200 terms for x = 50, so the sum is within 10^-137 of e^x (>= 1).
  let term = scale;
  let sum = scale;
  for (let n = 1n; term !== 0n; n += 1n) {
    term = (term * fixed) / (scale * n);
    sum += term;
  }
  cached = round(sum, -GUARD_DIGITS, "half_even", true);
  expCache.set(x, cached);
  return cached;
}
