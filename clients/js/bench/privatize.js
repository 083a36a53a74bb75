// Time to privatize one record, per specification: the large-domain oracles below, then every
// specification of the law fixtures (mean over RECORDS records after a warm-up).
// Run from clients/js: node bench/privatize.js
import { readFileSync } from "node:fs";
import { Randomizer } from "../src/index.js";

const RECORDS = 20000;
const oracles = {
  randomized_response: { n_inputs: 1000 },
  rappor: { n_inputs: 100 },
  oue: { n_inputs: 1000 },
  subset_selection: { n_inputs: 1000, params: { subset_size: 50 } },
  olh: { n_inputs: 100000, params: { n_buckets: 4 } },
  blh: { n_inputs: 100000 },
  hadamard: { n_inputs: 1000 },
  hrr: { n_inputs: 100000 },
};
const cases = Object.entries(oracles).map(([kind, extra]) => [`${kind} n=${extra.n_inputs}`,
  JSON.stringify({ version: 1, mechanism: kind, epsilon: 1.0, params: {}, ...extra }), null]);
const laws = JSON.parse(readFileSync(new URL("../test/fixtures/laws.json", import.meta.url)));
for (const law of laws) cases.push([law.name, law.spec, law.value]);

for (const [name, spec, fixed] of cases) {
  const randomizer = Randomizer.fromJSON(spec); // 64-bit hash seeds read exactly
  const value = (i) => fixed ?? i % randomizer.nInputs;
  for (let i = 0; i < 1000; i++) randomizer.privatize(value(i));
  const start = process.hrtime.bigint();
  for (let i = 0; i < RECORDS; i++) randomizer.privatize(value(i * 7919));
  const micros = Number(process.hrtime.bigint() - start) / 1000 / RECORDS;
  console.log(`${name.padEnd(32)} ${micros.toFixed(1).padStart(7)} us/record`);
}
