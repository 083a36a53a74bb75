// Time to privatize one record, per kind (mean over 20,000 records after a warm-up).
// Run from clients/js: node bench/privatize.js
import { Randomizer } from "../src/index.js";

const SPECS = {
  randomized_response: { n_inputs: 1000 },
  rappor: { n_inputs: 100 },
  oue: { n_inputs: 1000 },
  subset_selection: { n_inputs: 1000, params: { subset_size: 50 } },
  olh: { n_inputs: 100000, params: { n_buckets: 4 } },
  blh: { n_inputs: 100000 },
  hadamard: { n_inputs: 1000 },
  hrr: { n_inputs: 100000 },
};
const RECORDS = 20000;

for (const [kind, extra] of Object.entries(SPECS)) {
  const randomizer = new Randomizer({ version: 1, mechanism: kind, epsilon: 1.0, params: {},
    ...extra });
  const n = randomizer.nInputs;
  for (let i = 0; i < 1000; i++) randomizer.privatize(i % n);
  const start = process.hrtime.bigint();
  for (let i = 0; i < RECORDS; i++) randomizer.privatize((i * 7919) % n);
  const micros = Number(process.hrtime.bigint() - start) / 1000 / RECORDS;
  console.log(`${kind.padEnd(20)} n_inputs=${String(n).padEnd(7)} ${micros.toFixed(1)} us/record`);
}
