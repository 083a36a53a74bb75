// The "columns" kind: LDPEncoder's records, each column reported by its own part (a numeric
// kind, sampled_mean, multi_attribute or a frequency oracle), the parts' reports side by side
// -- the Python client's columns.py.

import { ValueError, repr, shortRepr as short } from "./errors.js";
import { nextUp } from "./floats.js";
import { multiAttribute } from "./multi_attribute.js";
import {
  MEAN_KINDS, checkBounds, dyadic, meanKind, rationalToDouble, sampledMean, squareWave,
} from "./numeric.js";
import { ORACLE_KINDS } from "./oracles.js";
import { Categories } from "./records.js";
import { checkBudget, checkFields, isPlainObject, specVersion } from "./spec.js";

const MAX_ATTRIBUTES = 1024;
const MAX_CELLS = 2 ** 24;
const ORACLE_PART_KINDS = Object.keys(ORACLE_KINDS);

/** The smallest double at least the exact sum of the budgets (ColumnsMechanism.epsilon). */
function budgetSum(budgets) {
  const terms = budgets.map(dyadic); // each budget m 2^k, exactly
  const low = Math.min(...terms.map(([, k]) => k));
  const numerator = terms.reduce((sum, [m, k]) => sum + (m << BigInt(k - low)), 0n);
  const denominator = 2n ** BigInt(-Math.min(low, 0));
  const scaled = low > 0 ? numerator << BigInt(low) : numerator;
  let total = rationalToDouble(scaled, denominator);
  const [m, k] = dyadic(total);
  // Compare total = m 2^k with the exact sum scaled / denominator.
  const shift = k + Number(denominator.toString(2).length - 1);
  const below = shift >= 0 ? (m << BigInt(shift)) < scaled : m < (scaled << BigInt(-shift));
  if (below) total = nextUp(total);
  return total;
}

function columns(spec) {
  const kind = "columns";
  checkFields(spec, kind, ["epsilon", "n_inputs", "params"]);
  const epsilon = checkBudget(spec.epsilon, "epsilon", kind);
  const params = spec.params;
  if (!isPlainObject(params) || Object.keys(params).join() !== "parts" ||
      !Array.isArray(params.parts) || params.parts.length < 1 ||
      params.parts.length > MAX_ATTRIBUTES) {
    throw new ValueError("params of the 'columns' specification must be {'parts': [...]} " +
      `with 1 to ${MAX_ATTRIBUTES} parts, got ${short(params)}.`);
  }
  const parts = [];
  const seen = new Set();
  const budgets = [];
  let declared = 0;
  Array.from(params.parts).forEach((entry, position) => {
    const where = `part ${position} of the 'columns' specification`;
    if (!isPlainObject(entry) || Object.keys(entry).sort().join() !== "columns,spec") {
      throw new ValueError(`${where} must be an object with 'columns' and 'spec', got ` +
        `${short(entry)}.`);
    }
    const names = entry.columns;
    let part = entry.spec;
    if (!Array.isArray(names) || !names.length || names.length > MAX_ATTRIBUTES ||
        !Array.from(names).every((c) => typeof c === "string")) {
      throw new ValueError(`${where}: 'columns' must be a list of 1 to ${MAX_ATTRIBUTES} ` +
        `column names, got ${short(names)}.`);
    }
    let duplicated = names.filter((c) => seen.has(c));
    if (!duplicated.length) duplicated = names.filter((c, i) => names.indexOf(c) !== i);
    if (duplicated.length) {
      throw new ValueError(`${where}: the columns ${repr([...new Set(duplicated)].sort())} ` +
        "appear more than once.");
    }
    names.forEach((c) => seen.add(c));
    if (!isPlainObject(part) || typeof part.mechanism !== "string") {
      throw new ValueError(`${where}: 'spec' must be a mechanism specification, got ` +
        `${short(part)}.`);
    }
    const sub = part.mechanism;
    if (part.version !== specVersion(sub)) {
      throw new ValueError(`${where}: unsupported specification version ` +
        `${repr(part.version)}.`);
    }
    part = { ...part };
    if (MEAN_KINDS.includes(sub) || sub === "square_wave") {
      if (names.length !== 1) {
        throw new ValueError(`${where}: the ${repr(sub)} mechanism reports one column, got ` +
          `${repr(names)}.`);
      }
      const [, privatize] = (sub === "square_wave" ? squareWave : meanKind)(part);
      checkBounds(part.bounds, "bounds", sub);
      parts.push({ role: "number", names, privatize });
      budgets.push(checkBudget(part.epsilon, "epsilon", sub));
    } else if (sub === "sampled_mean") {
      const [d, privatize] = sampledMean(part);
      if (names.length !== d) {
        throw new ValueError(`${where}: a sampled-mean part over ${d} attributes needs as ` +
          `many columns, got ${repr(names)}.`);
      }
      parts.push({ role: "numbers", names, privatize });
      budgets.push(checkBudget(part.epsilon, "epsilon", sub));
    } else if (sub === "multi_attribute") {
      const [d, privatize] = multiAttribute(part); // takes checked category codes
      if (names.length !== d) {
        throw new ValueError(`${where}: a multi-attribute part over ${d} attributes needs ` +
          `as many columns, got ${repr(names)}.`);
      }
      declared += part.shape.reduce((a, b) => a + b, 0);
      parts.push({ role: "categories", names, privatize, sizes: [...part.shape] });
      // The record-level budget: the attribute budget (RS+FD's attribute neighbourhood is
      // refused by multiAttribute in this client).
      budgets.push(part.epsilon);
    } else if (ORACLE_PART_KINDS.includes(sub)) {
      if (names.length !== 1) {
        throw new ValueError(`${where}: a frequency-oracle part reports one column, got ` +
          `${repr(names)}.`);
      }
      const [n, privatizeCell] = ORACLE_KINDS[sub](part);
      declared += n;
      const privatize = (codes, rng) => {
        const report = privatizeCell(codes[0], rng);
        return Array.isArray(report) ? report : [report];
      };
      parts.push({ role: "categories", names, privatize, sizes: [n] });
      budgets.push(checkBudget(part.epsilon, "epsilon", sub));
    } else {
      throw new ValueError(`${where}: unknown mechanism ${repr(sub)} for a column part ` +
        "(known: ('duchi', 'piecewise', 'hybrid', 'square_wave', 'sampled_mean', " +
        `'multi_attribute') and the frequency oracles (${ORACLE_PART_KINDS.map(repr)
          .join(", ")})).`);
    }
    if (declared > MAX_CELLS) {
      throw new ValueError(`the 'columns' specification declares ${declared} categories in ` +
        `all (part ${position}), more than ${MAX_CELLS}.`);
    }
  });
  const order = parts.flatMap((part) => part.names);
  if (order.length > MAX_ATTRIBUTES) {
    throw new ValueError(`the 'columns' specification has ${order.length} columns, more than ` +
      `${MAX_ATTRIBUTES}.`);
  }
  const total = budgetSum(budgets);
  if (epsilon !== total) {
    throw new ValueError(`the 'columns' specification claims epsilon=${repr(epsilon)}, but its ` +
      `parts spend ${repr(total)} (their sum).`);
  }
  if (spec.n_inputs !== order.length) {
    throw new ValueError(`the 'columns' specification claims n_inputs=${repr(spec.n_inputs)}, ` +
      `but its parts hold ${order.length} columns.`);
  }
  const lookups = new Map();
  const bind = (categories) => {
    if (!isPlainObject(categories)) {
      throw new ValueError("categories must be a mapping column -> list of categories.");
    }
    const categorical = new Map();
    for (const part of parts.filter((p) => p.role === "categories")) {
      part.names.forEach((c, i) => categorical.set(c, [part, i]));
    }
    for (const [column, values] of Object.entries(categories)) {
      if (!categorical.has(column)) {
        throw new ValueError(`categories name the column ${repr(column)}, which is not a ` +
          `categorical column of the specification ${repr([...categorical.keys()].sort())}.`);
      }
      const [part, i] = categorical.get(column);
      const lookup = new Categories({ [column]: values });
      if (lookup.sizes[0] !== part.sizes[i]) {
        throw new ValueError(`column ${repr(column)} has ${lookup.sizes[0]} categories but ` +
          `the specification declares ${part.sizes[i]}.`);
      }
      lookups.set(column, lookup);
    }
  };
  const privatize = (record, rng) => {
    if (!isPlainObject(record)) {
      throw new ValueError("a 'columns' record is a dict column -> value with the columns " +
        `${repr(order)}, got ${short(record)}.`);
    }
    const missing = order.filter((c) => !Object.hasOwn(record, c));
    if (missing.length) {
      throw new ValueError(`the record has no value for column(s) ${repr(missing)}.`);
    }
    const extra = Object.keys(record).filter((c) => !seen.has(c)).sort();
    if (extra.length) {
      throw new ValueError(`the record has columns ${repr(extra)} that the specification ` +
        `does not know (it has ${repr(order)}).`);
    }
    return parts.flatMap(({ role, names, privatize: randomize, sizes }) => {
      if (role === "number") return [randomize(record[names[0]], rng)];
      if (role === "numbers") return randomize(names.map((c) => record[c]), rng);
      const codes = names.map((column, i) => {
        const value = record[column];
        if (lookups.has(column)) return lookups.get(column).codesOf({ [column]: value })[0];
        if (typeof value !== "number" || !Number.isInteger(value) || value < 0 ||
            value >= sizes[i]) {
          throw new ValueError(`column ${repr(column)} has the value ${repr(value)}: without ` +
            `categories= for it, a category code in [0, ${sizes[i]}).`);
        }
        return value;
      });
      return randomize(codes, rng);
    });
  };
  return [order.length, privatize, { takesValues: true, bind, columns: order }];
}

/** The "columns" kind of LDPEncoder's records. */
export const COLUMNS_KINDS = { columns };
