// The fixtures the server wrote (make_fixtures.py), read once.
import { readFileSync } from "node:fs";
import { parseJSON } from "../src/json.js";

const here = new URL("./fixtures/", import.meta.url);

export function fixture(name) {
  // parseJSON: integers beyond 2^53 (hash seeds) stay exact, as Randomizer.fromJSON reads them.
  return parseJSON(readFileSync(new URL(`${name}.json`, here), "utf8"));
}

/** JSON text of a value holding BigInts (written as exact integers). */
export function jsonText(value) {
  return JSON.stringify(value, (key, v) => (typeof v === "bigint" ? `\u0000${v}` : v))
    .replace(/"\\u0000(-?\d+)"/g, "$1");
}
