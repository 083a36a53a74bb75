// Randomizer: the public client, rebuilt from the server's JSON specification, privatizes one
// record -- the Python client's randomizer.py for the kinds this package supports.

import { ValueError, repr } from "./errors.js";
import { ORACLE_KINDS } from "./oracles.js";
import { COLUMNS_KINDS } from "./columns.js";
import { HEAVY_HITTER_KINDS } from "./heavy_hitters.js";
import { HISTOGRAM_ENCODING_KINDS } from "./histogram_encoding.js";
import { ITEMSET_KINDS } from "./itemsets.js";
import { parseJSON } from "./json.js";
import { LONGITUDINAL_KINDS } from "./longitudinal.js";
import { MARGINAL_KINDS } from "./marginals.js";
import { DEFAULT_STATE_KEY, SecretState } from "./memo.js";
import { MULTI_ATTRIBUTE_KINDS } from "./multi_attribute.js";
import { MULTI_RANGE_KINDS } from "./multi_range.js";
import { NUMERIC_KINDS } from "./numeric.js";
import { ExactRandom } from "./random.js";
import { RANGE_KINDS } from "./ranges.js";
import { RAPPOR_KINDS } from "./rappor.js";
import { SET_VALUED_KINDS } from "./set_valued.js";
import { Categories } from "./records.js";
import { isPlainObject, specVersion } from "./spec.js";

// Local kinds of the Python client that this one does not randomize: the Gaussian lattices.
const PYTHON_CLIENT_KINDS = ["gaussian", "gaussian_pure"];

/** Every kind this client rebuilds, by its specification name. */
export const RANDOMIZERS = { ...ORACLE_KINDS, ...RANGE_KINDS, ...MARGINAL_KINDS,
  ...NUMERIC_KINDS, ...HEAVY_HITTER_KINDS, ...MULTI_ATTRIBUTE_KINDS, ...COLUMNS_KINDS,
  ...LONGITUDINAL_KINDS, ...MULTI_RANGE_KINDS, ...HISTOGRAM_ENCODING_KINDS, ...RAPPOR_KINDS,
  ...SET_VALUED_KINDS, ...ITEMSET_KINDS };

/**
 * The randomizer of one LDP mechanism, rebuilt from its JSON specification.
 *
 * new Randomizer(spec, { categories, randomSource, state, stateKey }): spec is the parsed
 * object of the server's mechanism.to_json() (Randomizer.fromJSON parses the text); categories
 * the public categories of the server's domain, in its order (then privatize takes records);
 * randomSource a function filling a Uint8Array with uniform bytes, for tests only (default:
 * crypto.getRandomValues). The memoizing kinds (longitudinal, dbitflip_pm, 1bitmean_pm) need
 * state, a storage with get(key) and set(key, text) that keeps the device's secret under
 * stateKey (default "sklearn-ldp-client-state"; one key per specification): LocalStorage in a
 * browser, MemoryStorage in tests.
 */
export class Randomizer {
  constructor(spec, { categories, randomSource, state, stateKey = DEFAULT_STATE_KEY } = {}) {
    if (!isPlainObject(spec) || !Object.hasOwn(spec, "mechanism")) {
      throw new ValueError("not a mechanism specification (a JSON object with 'version' and " +
        `'mechanism'): ${repr(JSON.stringify(spec ?? null)?.slice(0, 80))}.`);
    }
    const kind = spec.mechanism;
    const expected = specVersion(kind);
    if (spec.version !== expected) {
      throw new ValueError(`unsupported specification version ${repr(spec.version)}; this ` +
        `client reads version ${expected} of ${repr(kind)}.`);
    }
    if (PYTHON_CLIENT_KINDS.includes(kind)) {
      throw new ValueError(`the ${repr(kind)} mechanism is randomized by the Python client ` +
        "(sklearn_ldp.deploy.client), not by this one.");
    }
    if (typeof kind !== "string" || !Object.hasOwn(RANDOMIZERS, kind)) {
      throw new ValueError(`unknown mechanism ${repr(kind)}; this client randomizes ` +
        `${repr(Object.keys(RANDOMIZERS).sort())} (central-model mechanisms run on the ` +
        "curator, not on clients).");
    }
    this.kind = kind;
    const [nInputs, privatizeCell, options] = RANDOMIZERS[kind]({ ...spec });
    this.epsilon = spec.epsilon;
    this.nInputs = nInputs;
    this._privatizeCell = privatizeCell;
    // The numeric kinds take a number within the spec's bounds, not a cell index.
    this._takesValues = Boolean(options?.takesValues);
    this._encodeValue = options?.encode ?? null;
    this._state = null;
    if (options?.stateful) {
      this._derive = { derive: options.derive }; // (value, secret) -> the PRF part (tests)
      if (state === undefined || state === null) {
        throw new ValueError(`the ${repr(kind)} mechanism memoizes permanent responses: ` +
          "pass state=<a storage with get and set: LocalStorage, MemoryStorage>.");
      }
      this._state = new SecretState(state, stateKey, spec);
    } else if (state !== undefined && state !== null) {
      throw new ValueError(`state: the ${repr(kind)} mechanism keeps no client state.`);
    }
    if (this._takesValues && categories !== undefined) {
      // A value kind with columns (multi_attribute) binds them; the others take none.
      if (!options.bind) {
        throw new ValueError(`the ${repr(kind)} mechanism takes no categories (its values ` +
          "are numbers, bit strings or cell indices).");
      }
      options.bind(categories);
      this.columns = Object.keys(categories);
    }
    this._categories = categories === undefined || this._takesValues ? null
      : new Categories(categories);
    if (this._categories !== null && this._categories.size !== nInputs) {
      throw new ValueError(`the categories describe ${this._categories.size} cells ` +
        `(${this._categories.sizes.join(" x ")}) but the ${repr(kind)} mechanism covers ` +
        `${nInputs}: they are not the server's domain.`);
    }
    if (options?.columns) {
      this.columns = [...options.columns]; // a "columns" record: every column
    } else if (!this._takesValues || categories === undefined) {
      this.columns = this._categories === null ? null : [...this._categories.columns];
    }
    this._rng = new ExactRandom(randomSource);
  }

  /** Rebuild the randomizer from the text of mechanism.to_json() (integers beyond 2^53, such
   * as a sketch's 64-bit hash_seed, are read exactly as BigInts). */
  static fromJSON(text, options = {}) {
    let spec;
    try {
      spec = parseJSON(text); // JSON.parse, with 64-bit integers (hash seeds) kept exact
    } catch (error) {
      throw new ValueError(`the mechanism specification is not valid JSON: ${error.message}`);
    }
    return new Randomizer(spec, options);
  }

  /** The flat cell index of a record (needs categories), as the server's Domain.encode. */
  encode(record) {
    if (this._encodeValue !== null) return this._encodeValue(record); // category codes
    if (this._categories === null) {
      throw new ValueError("encode needs the domain's categories: build the Randomizer with " +
        "categories=...");
    }
    return this._categories.encode(record);
  }

  /**
   * One privatized report of `value` (a cell index in [0, nInputs), or a record with
   * categories; for the numeric kinds a number within the spec's bounds, refused outside),
   * in the Python client's report format: a Number (a cell or output index, a grid value,
   * Duchi's 0 or 1), an array of byte values (packed bits) or [seed, bucket] with a BigInt
   * seed; reportToJSON writes it as JSON.
   */
  privatize(value) {
    if (this._takesValues) return this._privatizeCell(value, this._rng, this._state);
    let cell;
    if (this._categories !== null) {
      cell = this._categories.encode(value);
    } else {
      if (typeof value !== "number" || !Number.isInteger(value) || value < 0 ||
          value >= this.nInputs) {
        throw new ValueError(`the value must be a cell index, an integer in [0, ` +
          `${this.nInputs}), got ${repr(value)} (pass categories= to privatize records).`);
      }
      cell = value;
    }
    return this._privatizeCell(cell, this._rng);
  }
}

/** The JSON text of a report, BigInts (64-bit hash seeds) written as exact integers. */
export function reportToJSON(report) {
  if (typeof report === "bigint") return report.toString();
  if (Array.isArray(report)) return `[${report.map(reportToJSON).join(",")}]`;
  return JSON.stringify(report);
}
