// The range kinds: `factorization` (the integer table the spec carries), the `hierarchical`
// tree and `haar` -- the Python client's ranges.py.

import { ValueError, repr } from "./errors.js";
import { parity, ratioDraw, ratioWeights, within } from "./exact.js";
import { makeHrr, makeLocalHashing, makeUnary, olhBuckets } from "./oracles.js";
import { checkBudget, checkInt, common, specField } from "./spec.js";

const TABLE_PRECISION = 52;
const TABLE_ONE = 2 ** TABLE_PRECISION; // a safe integer: sums of table entries stay exact
const MAX_TABLE_ENTRIES = 2 ** 27; // sklearn_ldp.deploy.limits: the default max_matrix_entries

/** The server's exact check of a strategy's integer table; returns its columns [u][o]. */
function normalizedStrategy(table, epsilon, kind) {
  const name = `table of the ${repr(kind)} specification`;
  // Array.from: a hole of a sparse array is checked as undefined (every() would skip it).
  if (!Array.isArray(table) || !table.length ||
      !Array.from(table, (row) => Array.isArray(row) && row.length > 0).every(Boolean)) {
    throw new ValueError(`the ${name} must be a non-empty list of non-empty lists (rows).`);
  }
  const width = table[0].length;
  if (table.length * width > MAX_TABLE_ENTRIES) { // before reading any entry
    throw new ValueError(`the ${name} has ${table.length} x ${width} entries, more than ` +
      `${MAX_TABLE_ENTRIES} (sklearn_ldp.deploy.limits: max_matrix_entries).`);
  }
  table.forEach((row, o) => {
    if (row.length !== width) {
      throw new ValueError(`the ${name} is not rectangular: row ${o} has ${row.length} ` +
        `entries, row 0 has ${width}.`);
    }
    for (const value of row) {
      if (typeof value !== "number" || !Number.isInteger(value)) {
        throw new ValueError(`the ${name} must hold integers; row ${o} holds ${repr(value)}.`);
      }
      if (value < 0 || value > TABLE_ONE) {
        throw new ValueError(`the ${name} must hold weights in [0, 2**${TABLE_PRECISION}]; ` +
          `row ${o} holds ${repr(value)}.`);
      }
    }
  });
  const columns = Array.from({ length: width }, (_, u) => table.map((row) => row[u]));
  columns.forEach((column, u) => {
    const total = column.reduce((sum, value) => sum + BigInt(value), 0n); // exact
    if (total !== BigInt(TABLE_ONE)) {
      throw new ValueError(`column ${u} of the ${name} sums to ${total}, not ` +
        `2**${TABLE_PRECISION}: refusing to privatize with it.`);
    }
  });
  table.forEach((row, o) => {
    const high = Math.max(...row);
    const low = Math.min(...row);
    if (high === 0) {
      throw new ValueError(`row ${o} of the ${name} is 0 for every input: an output that is ` +
        "never reported must not be listed.");
    }
    if (!within(BigInt(high), BigInt(low), epsilon)) {
      const ratio = low === 0 ? "infinite" : repr(high / low);
      throw new ValueError(`row ${o} of the ${name} has weight ${high} for input ` +
        `${row.indexOf(high)} and ${low} for input ${row.indexOf(low)}: its realised ratio ` +
        `${ratio} exceeds e^${repr(epsilon)}: the table is not ${epsilon}-LDP; refusing to ` +
        "privatize with it.");
    }
  });
  return columns;
}

function factorization(spec) {
  const kind = "factorization";
  const epsilon = checkBudget(specField(spec, "epsilon", kind), "epsilon", kind);
  if (Object.hasOwn(spec, "Q")) {
    throw new ValueError("the 'factorization' specification carries a float matrix 'Q' " +
      "(version 1); this client samples the integer 'table' of version 2.");
  }
  const precision = specField(spec, "precision", kind);
  if (precision !== TABLE_PRECISION) {
    throw new ValueError(`precision of the 'factorization' specification must be ` +
      `${TABLE_PRECISION}, got ${repr(precision)}.`);
  }
  const columns = normalizedStrategy(specField(spec, "table", kind), epsilon, kind);
  const cumulative = columns.map((column) => {
    let sum = 0;
    return column.map((value) => (sum += value));
  });
  const privatize = (cell, rng) => {
    // The first output whose cumulative weight exceeds a uniform 52-bit integer (binary
    // search): P(o | u) = table[o][u] / 2^52 exactly.
    const draw = rng.word52();
    const sums = cumulative[cell];
    let lo = 0;
    let hi = sums.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (sums[mid] <= draw) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
  return [columns.length, privatize];
}

const LEVEL_ORACLES = ["oue", "olh", "hrr"];

function hierarchical(spec) {
  const [n, epsilon, params] = common(spec, ["branching", "oracle", "olh_hash"]);
  const branching = checkInt(params.branching ?? 4, "branching", 2);
  const oracle = params.oracle ?? "oue";
  if (!LEVEL_ORACLES.includes(oracle)) {
    throw new ValueError(`oracle of the 'hierarchical' specification must be one of ` +
      `${repr(LEVEL_ORACLES)}, got ${repr(oracle)}.`);
  }
  let height = 1;
  let width = branching;
  while (width < n) {
    width *= branching;
    height += 1;
  }
  const widths = Array.from({ length: height }, (_, i) => branching ** (height - 1 - i));
  const sizes = widths.map((w) => Math.ceil(n / w));
  let levels;
  let widthBytes = 0;
  const offsets = [0];
  if (oracle === "oue") {
    levels = sizes.map((m) => makeUnary("oue", m, epsilon));
    widthBytes = Math.ceil(sizes[sizes.length - 1] / 8); // every row as wide as the leaves'
  } else if (oracle === "olh") {
    // "by_size": each level takes the server's default family (linear at every size); specs
    // without olh_hash hashed every level by tabulation.
    const olhHash = params.olh_hash ?? "tabulation";
    if (olhHash !== "by_size" && olhHash !== "tabulation") {
      throw new ValueError(`olh_hash must be 'by_size' or 'tabulation', got ${repr(olhHash)}.`);
    }
    const family = olhHash === "by_size" ? "linear" : "tabulation";
    levels = sizes.map((m) => makeLocalHashing(m, epsilon, olhBuckets(epsilon, family), family));
  } else {
    levels = sizes.map((m) => makeHrr(m, epsilon));
    for (const level of levels) offsets.push(offsets[offsets.length - 1] + level.nOutputs);
  }
  const privatize = (cell, rng) => {
    const k = rng.belowNumber(height);
    const report = levels[k](Math.floor(cell / widths[k]), rng);
    if (oracle === "oue") {
      return [k + 1, ...report, ...new Array(widthBytes - report.length).fill(0)];
    }
    if (oracle === "olh") return [k + 1, ...report];
    return offsets[k] + report;
  };
  if (oracle === "olh") {
    // For the tests: the law given the level's hash seed (the seed is 64 uniform bits).
    privatize.reportGivenSeed = (cell, seed, rng) => {
      const k = rng.belowNumber(height);
      return [k + 1, ...levels[k].reportGivenSeed(Math.floor(cell / widths[k]), seed, rng)];
    };
  }
  return [n, privatize];
}

function haar(spec) {
  const [n, epsilon] = common(spec);
  const height = Math.max(1, (n - 1).toString(2).length - (n === 1 ? 1 : 0));
  const sizes = Array.from({ length: height }, (_, i) => 2 ** (height - 1 - i));
  const offsets = [0];
  for (const m of sizes) offsets.push(offsets[offsets.length - 1] + 2 * m);
  const weights = ratioWeights(epsilon, 1, 1, "haar");
  const privatize = (cell, rng) => {
    const level = 1 + rng.belowNumber(height);
    const coefficient = rng.belowNumber(sizes[level - 1]);
    const c = BigInt(cell);
    const negative = Number((c >> BigInt(level - 1)) & 1n) ^
      parity(BigInt(coefficient), c >> BigInt(level));
    const flipped = !ratioDraw(rng, 1, 1, ...weights)[0];
    return offsets[level - 1] + 2 * coefficient + (1 ^ negative ^ (flipped ? 1 : 0));
  };
  privatize.weights = weights;
  return [n, privatize];
}

/** The range kinds by kind name. */
export const RANGE_KINDS = { factorization, hierarchical, haar };
