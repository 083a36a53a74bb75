// Type declarations of sklearn-ldp-client.

/** A refused specification, value or category; the message names the field and the value. */
export class ValueError extends Error {
  name: "ValueError";
}

/** Fills a byte array with uniform random bytes (crypto.getRandomValues by default). */
export type RandomSource = (bytes: Uint8Array) => void;

/**
 * Exact random primitives: uniform bits, uniform integers below n by rejection, dyadic
 * Bernoulli bits. Every draw of the client goes through one instance.
 */
export class ExactRandom {
  constructor(fill?: RandomSource);
  /** A uniform integer of `bits` bits (0 <= bits <= 53). */
  bitsNumber(bits: number): number;
  /** A uniform integer of `bits` bits. */
  bitsBigInt(bits: number): bigint;
  /** A uniform 52-bit word. */
  word52(): number;
  /** Bernoulli(numerator / 2^52), exactly. */
  bernoulli52(numerator: number): boolean;
  /** An exactly uniform integer in [0, n) by rejection (a Number n <= 2^32, or a BigInt). */
  below(n: number): number;
  below(n: bigint): bigint;
  /** An exactly uniform integer in [0, n) for a safe integer n. */
  belowNumber(n: number): number;
}

/** The server's JSON specification of a mechanism (mechanism.to_json()). */
export interface MechanismSpec {
  version: number;
  mechanism: string;
  epsilon: number;
  /** The number of domain cells (frequency oracles). */
  n_inputs?: number;
  /** [low, high] (numeric kinds). */
  bounds?: [number, number];
  /** The integers of the numeric kinds' public grid. */
  grid?: Record<string, unknown>;
  params?: Record<string, unknown>;
  [field: string]: unknown;
}

/** A category value of the server's domain. */
export type Category = string | number | boolean;

/** The public categories of the server's domain, column -> categories in the server's order. */
export type Categories = Record<string, Category[]>;

/** A record: column -> value, the values in column order, or one value (one column). */
export type DomainRecord = Record<string, Category> | Category[] | Category;

/**
 * One report, as the Python client's Randomizer.privatize returns it: a number (a cell or
 * output index, a grid value, Duchi's 0 or 1) or an array of numbers (packed bits as byte
 * values, several parts side by side), where a 64-bit hash seed is a BigInt ([seed, bucket]
 * of local hashing, [level, seed, bucket] of the OLH tree, [round, seed, y] of PEM/TreeHist).
 */
export type Report = number | Array<number | bigint>;

/** A value: a cell index, a record (with categories), a number, numbers, a heavy-hitter
 * value (integer or string), [value, bit_length] for a sketch, or a "columns" record. */
export type Value = number | bigint | string | Array<number | bigint | string | boolean> |
  Record<string, unknown> | SetValuedRecord;

/** A set_items record (item codes, or the spec's item labels) or a pckv_grr / pckv_ue record
 * (key code, or the spec's key label, -> value in [-1, 1] on the spec's lattice
 * j / value_steps). */
export type SetValuedRecord = Set<Category | null> | Array<Category | null> |
  Map<number | string, number> | Array<[number | string, number]>;

export interface RandomizerOptions {
  /** The public categories of the server's domain: privatize then takes records. */
  categories?: Categories;
  /** Tests only: a byte source other than crypto.getRandomValues makes the noise reproducible. */
  randomSource?: RandomSource;
  /** The memoizing kinds (longitudinal, dbitflip_pm, 1bitmean_pm, bloom_rappor): where the
   * device's secret is kept (required for them, refused for the others). */
  state?: StateStorage;
  /** The key of the secret in `state` (default "sklearn-ldp-client-state"); one key per
   * specification: a stored secret of another specification is refused. */
  stateKey?: string;
}

/** Where a memoizing kind keeps the device's secret: text under a key. */
export interface StateStorage {
  get(key: string): string | null | undefined;
  set(key: string, text: string): void;
}

/** Device state in memory (tests, or a page that keeps nothing across loads). */
export class MemoryStorage implements StateStorage {
  constructor();
  get(key: string): string | null;
  set(key: string, text: string): void;
}

/**
 * Device state in IndexedDB: `open` loads the entries into memory; `get` reads memory, `set`
 * writes to IndexedDB (an entry is written once, never replaced). Await `flush()` after
 * privatizing and before sending: it resolves when every write is committed.
 */
export class IndexedDBStorage implements StateStorage {
  static open(options?: { database?: string; store?: string; indexedDB?: unknown }):
    Promise<IndexedDBStorage>;
  get(key: string): string | null;
  set(key: string, text: string): void;
  flush(): Promise<void>;
  close(): void;
}

/** Device state in a Web Storage object (default: the page's localStorage). */
export class LocalStorage implements StateStorage {
  constructor(storage?: { getItem(key: string): string | null;
    setItem(key: string, value: string): void });
  get(key: string): string | null;
  set(key: string, text: string): void;
}

/** The randomizer of one LDP mechanism, rebuilt from its JSON specification. */
export class Randomizer {
  constructor(spec: MechanismSpec, options?: RandomizerOptions);
  /** Rebuild the randomizer from the text of mechanism.to_json(). */
  static fromJSON(text: string, options?: RandomizerOptions): Randomizer;
  /** The mechanism kind, e.g. "oue". */
  readonly kind: string;
  /** The privacy parameter of the specification. */
  readonly epsilon: number;
  /** The number of domain cells (the numeric kinds: values a record; heavy hitters: null). */
  readonly nInputs: number | null;
  /** The record columns when categories were given, else null. */
  readonly columns: string[] | null;
  /** The flat cell index of a record (needs categories), as the server's Domain.encode;
   * for multi_attribute the category codes of its attributes; for set_items the sorted item
   * codes, for pckv_grr / pckv_ue the sorted [key code, j] pairs (value = j / value_steps); for
   * itemsets the indices of the candidate itemsets the set contains. */
  encode(record: DomainRecord | SetValuedRecord): number | number[] | Array<[number, number]>;
  /** One privatized report of a cell index in [0, nInputs) (or a record, with categories;
   * for the numeric kinds a number within the spec's bounds, for sampled_mean one number an
   * attribute, for prefix_heavy_hitters an integer or a string; for set_items and itemsets a
   * set of items, for pckv_grr / pckv_ue [key, value] pairs). */
  privatize(value: Value): Report;
}

/** Every kind this client rebuilds, by its specification name. */
export const RANDOMIZERS: Readonly<Record<string, unknown>>;

/** The JSON text of a report (a 64-bit seed written as an exact integer). */
export function reportToJSON(report: Report): string;

/** The specification version of the kinds without their own version. */
export const SPEC_VERSION: number;
