// Random edits of valid specifications: each is either accepted (and then privatizes) or
// refused with a ValueError; nothing else escapes (no TypeError, RangeError, hang).
import assert from "node:assert/strict";
import { test } from "node:test";
import { MemoryStorage, Randomizer, ValueError } from "../src/index.js";
import { fixture } from "./fixtures.js";

const STRANGE = [0, -1, 1, 2, 3, 0.5, 1e-300, 1e300, 2 ** 53, 2 ** 48 + 1, -0, null, true, "",
  "1", [], [1], {}, { a: 1 }, 4096, 65537, 2 ** 20];

// A small deterministic generator (the edits need not be secret; the client's draws are).
function lcg(seed) {
  let state = seed;
  return (n) => {
    state = (state * 1103515245 + 12345) % 2147483648;
    return state % n;
  };
}

function paths(value, prefix = []) {
  if (typeof value !== "object" || value === null) return [prefix];
  const inner = Object.keys(value).flatMap((key) => paths(value[key], [...prefix, key]));
  return prefix.length ? [prefix, ...inner] : inner;
}

test("random edits of valid specs are accepted or refused with a ValueError", () => {
  const specs = fixture("laws").map((law) => JSON.parse(law.spec));
  const pick = lcg(20261128);
  let refused = 0;
  for (let i = 0; i < 1500; i++) {
    const spec = structuredClone(specs[pick(specs.length)]);
    const candidates = paths(spec);
    const path = candidates[pick(candidates.length)];
    let target = spec;
    for (const key of path.slice(0, -1)) target = target[key];
    const last = path[path.length - 1];
    // Deleting a key (JSON has no sparse arrays: an array element is replaced instead).
    if (pick(5) === 0 && !Array.isArray(target)) delete target[last];
    else target[last] = structuredClone(STRANGE[pick(STRANGE.length)]);
    let randomizer;
    try {
      // The memoizing kinds need somewhere to keep the device's secret.
      const memoizing = ["longitudinal", "dbitflip_pm", "1bitmean_pm"].includes(spec.mechanism);
      randomizer = new Randomizer(spec, memoizing ? { state: new MemoryStorage() } : {});
    } catch (error) {
      assert.ok(error instanceof ValueError, `${JSON.stringify(spec)}: ${error.stack}`);
      refused += 1;
      continue;
    }
    const value = spec.bounds ? spec.bounds[0] : 0;
    try {
      randomizer.privatize(value);
    } catch (error) {
      assert.ok(error instanceof ValueError, `${JSON.stringify(spec)}: ${error.stack}`);
    }
  }
  assert.ok(refused > 1000, `only ${refused} of 1500 edits refused`);
});
