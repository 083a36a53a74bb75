// Time to privatize one record, per specification: the large-domain oracles below, then every
// specification of the law fixtures (mean over RECORDS records after a warm-up). The memoizing
// kinds keep their secret in a MemoryStorage: every record reads it back and derives the
// permanent response from it (SipHash-2-4 words), as on a device.
// Run from clients/js: node bench/privatize.js
import { readFileSync } from "node:fs";
import { MemoryStorage, Randomizer } from "../src/index.js";

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
// The memoizing kinds on 1000 values (the server's numerators for epsilon_perm 2, epsilon_1 1).
const memo = {
  "longitudinal l_grr k=1000": { protocol: "l_grr",
    numerators: { keep_perm: 33066089194219, keep_instant: 1220138791297786 } },
  "longitudinal l_oue k=1000": { protocol: "l_oue",
    numerators: { p_perm: 2251799813685248, q_perm: 536842235200283,
      p_instant: 2251799813685248, q_instant: 364506125329180 } },
  "longitudinal l_sue k=1000": { protocol: "l_sue",
    numerators: { p_perm: 3292395142304094, q_perm: 1211204485066402,
      p_instant: 3445236996668712, q_instant: 1058362630701784 } },
};
for (const [name, extra] of Object.entries(memo)) {
  cases.push([name, JSON.stringify({ version: 3, mechanism: "longitudinal", n_cells: 1000,
    epsilon_perm: 2.0, epsilon_1: 1.0, ...extra }), null]);
}
cases.push(["dbitflip_pm k=1000 d=10", JSON.stringify({ version: 1, mechanism: "dbitflip_pm",
  n_cells: 1000, epsilon: 1.0, n_sampled: 10 }), null]);
// The set-valued kinds on 1000 items (keys), records of 50 entries, pad length 20 (the
// server's specs: SetItemMechanism(1000, 20, 1.0, oracle="olh", max_set_size=64) and
// PCKVGRR(1000, 20, 1.0, value_steps=100, max_set_size=64); 62-bit weights kept as text).
cases.push(["set_items olh d=1000 s=50", JSON.stringify({ version: 1, mechanism: "set_items",
  epsilon: 1.0, n_inputs: 1000, params: { pad_length: 20, oracle: "olh", max_set_size: 64,
    items: null }, oracle: { version: 1, mechanism: "olh", epsilon: 1.0, n_inputs: 1020,
    params: { n_buckets: 4, hash_family: "linear" } } }),
Array.from({ length: 50 }, (_, i) => 20 * i)]);
cases.push(["pckv_grr d=1000 s=50", '{"version": 1, "mechanism": "pckv_grr", "epsilon": 1.0, ' +
  '"n_inputs": 1000, "params": {"pad_length": 20, "value_steps": 100, "max_set_size": 64}, ' +
  '"weights": [8372826328553321, 4503599627370496, 1566982787806226771, 576460752303423488]}',
Array.from({ length: 50 }, (_, i) => [20 * i, (i % 201 - 100) / 100])]);
const laws = JSON.parse(readFileSync(new URL("../test/fixtures/laws.json", import.meta.url)));
for (const law of laws) cases.push([law.name, law.spec, law.value]);

for (const [name, spec, fixed] of cases) {
  const memoizing = ["longitudinal", "dbitflip_pm", "1bitmean_pm"].includes(
    JSON.parse(spec).mechanism);
  // 64-bit hash seeds read exactly
  const randomizer = Randomizer.fromJSON(spec, memoizing ? { state: new MemoryStorage() } : {});
  const value = (i) => fixed ?? i % randomizer.nInputs;
  for (let i = 0; i < 1000; i++) randomizer.privatize(value(i));
  const start = process.hrtime.bigint();
  for (let i = 0; i < RECORDS; i++) randomizer.privatize(value(i * 7919));
  const micros = Number(process.hrtime.bigint() - start) / 1000 / RECORDS;
  console.log(`${name.padEnd(32)} ${micros.toFixed(1).padStart(7)} us/record`);
}
