// The fixtures the server wrote (make_fixtures.py), read once.
import { readFileSync } from "node:fs";

const here = new URL("./fixtures/", import.meta.url);

export function fixture(name) {
  return JSON.parse(readFileSync(new URL(`${name}.json`, here), "utf8"));
}
