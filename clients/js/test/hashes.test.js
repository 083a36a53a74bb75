// Local hashing's bucket H_seed(cell) equals the server's, bit for bit (both hash families).
import assert from "node:assert/strict";
import { test } from "node:test";
import { Randomizer } from "../src/index.js";
import { fixture } from "./fixtures.js";

for (const row of fixture("hashes")) {
  test(`hash parity with the server: ${row.spec}`, () => {
    const bucket = Randomizer.fromJSON(row.spec)._privatizeCell.bucket;
    row.seeds.forEach((seed, i) => {
      assert.equal(bucket(BigInt(seed), row.cells[i]), row.buckets[i],
        `seed ${seed}, cell ${row.cells[i]}`);
    });
  });
}
