// JSON text to values, as JSON.parse, except that an integer literal beyond 2^53 becomes a
// BigInt (exact): specifications carry 64-bit hash seeds, which JSON.parse would round.

import { ValueError } from "./errors.js";

const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
const STRING = /"(?:[^"\\\u0000-\u001f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"/y;
const WHITESPACE = /[ \t\n\r]*/y;

/** Parse JSON text; integers outside the safe range come back as BigInts. */
export function parseJSON(text) {
  if (typeof text !== "string") {
    throw new ValueError(`JSON text must be a string, got ${typeof text}.`);
  }
  let at = 0;
  const fail = (what) => {
    throw new SyntaxError(`${what} at position ${at}`);
  };
  const skip = () => {
    WHITESPACE.lastIndex = at;
    WHITESPACE.exec(text);
    at = WHITESPACE.lastIndex;
  };
  const match = (pattern) => {
    pattern.lastIndex = at;
    const found = pattern.exec(text);
    if (!found) return null;
    at = pattern.lastIndex;
    return found[0];
  };
  const value = (depth) => {
    if (depth > 256) fail("nesting too deep");
    skip();
    const c = text[at];
    if (c === "{") {
      at += 1;
      const object = {};
      skip();
      if (text[at] === "}") {
        at += 1;
        return object;
      }
      for (;;) {
        skip();
        const key = match(STRING);
        if (key === null) fail("expected a string key");
        skip();
        if (text[at] !== ":") fail("expected ':'");
        at += 1;
        // An own property even for "__proto__" (as JSON.parse makes it).
        Object.defineProperty(object, JSON.parse(key), { value: value(depth + 1),
          enumerable: true, writable: true, configurable: true });
        skip();
        if (text[at] === ",") at += 1;
        else if (text[at] === "}") {
          at += 1;
          return object;
        } else fail("expected ',' or '}'");
      }
    }
    if (c === "[") {
      at += 1;
      const array = [];
      skip();
      if (text[at] === "]") {
        at += 1;
        return array;
      }
      for (;;) {
        array.push(value(depth + 1));
        skip();
        if (text[at] === ",") at += 1;
        else if (text[at] === "]") {
          at += 1;
          return array;
        } else fail("expected ',' or ']'");
      }
    }
    if (c === '"') {
      const token = match(STRING);
      if (token === null) fail("bad string");
      return JSON.parse(token);
    }
    for (const [word, result] of [["true", true], ["false", false], ["null", null]]) {
      if (text.startsWith(word, at)) {
        at += word.length;
        return result;
      }
    }
    const token = match(NUMBER);
    if (token === null) fail(`unexpected ${c === undefined ? "end of text" : repr1(c)}`);
    const number = Number(token);
    if (/^-?\d+$/.test(token) && !Number.isSafeInteger(number)) return BigInt(token);
    return number;
  };
  const result = value(0);
  skip();
  if (at !== text.length) fail("unexpected text after the value");
  return result;
}

function repr1(c) {
  return JSON.stringify(c);
}
