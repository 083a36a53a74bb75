// The device state of the memoizing kinds in the browser's IndexedDB.
//
// The client reads its state synchronously (privatize returns a report, not a promise), and
// IndexedDB is asynchronous. So IndexedDBStorage loads every entry of its object store into
// memory once (IndexedDBStorage.open, awaited before the first report), answers get() from
// memory, and writes each set() to IndexedDB in its own transaction. flush() resolves when
// every write so far is committed, and rejects if one failed.
//
// Durability: a secret is created (and written) on the first report of a device. Until that
// write commits, a closed tab or a crash loses it, and the next page load would draw another
// secret: new permanent responses, whose average with the first reveals the value. So a page
// awaits flush() after privatizing and before sending anything: a report leaves the device
// only once its secret is on disk. Writes use IndexedDB's "strict" durability (committed to
// disk before the transaction completes) where the browser supports it.
//
// Two tabs: entries are written once and never overwritten (the state of a key is created
// once, then only read). A second tab that loaded before the first tab's secret was committed
// and drew its own finds the key taken: its flush() rejects (nothing is replaced), the entry
// is dropped from its memory (so its client refuses to report further), and it must reload,
// which reads the first tab's secret.
import { ValueError } from "./errors.js";

const DEFAULT_DATABASE = "sklearn-ldp";
const DEFAULT_STORE = "client-state";

function request(what) {
  return new Promise((resolve, reject) => {
    what.onsuccess = () => resolve(what.result);
    what.onerror = () => reject(what.error);
  });
}

function done(transaction) {
  return new Promise((resolve, reject) => {
    transaction.oncomplete = () => resolve();
    transaction.onerror = () => reject(transaction.error);
    transaction.onabort = () => reject(transaction.error ?? new Error("transaction aborted"));
  });
}

/** Device state in IndexedDB, read into memory on open (see the module comment). */
export class IndexedDBStorage {
  /**
   * Open (creating if needed) the object store and load its entries.
   *
   * @param {{database?: string, store?: string, indexedDB?: IDBFactory}} [options]
   * @returns {Promise<IndexedDBStorage>}
   */
  static async open({ database = DEFAULT_DATABASE, store = DEFAULT_STORE,
    indexedDB = globalThis.indexedDB } = {}) {
    if (!indexedDB || typeof indexedDB.open !== "function") {
      throw new ValueError("IndexedDBStorage needs IndexedDB (window.indexedDB); this " +
        "environment has none: use LocalStorage, MemoryStorage or another storage with get/set.");
    }
    for (const [name, value] of [["database", database], ["store", store]]) {
      if (typeof value !== "string" || !value) {
        throw new ValueError(`${name} must be a non-empty string, got ${String(value)}.`);
      }
    }
    const opening = indexedDB.open(database);
    opening.onupgradeneeded = () => opening.result.createObjectStore(store);
    let db = await request(opening);
    if (!db.objectStoreNames.contains(store)) {
      // Another store of the same database: add ours in a version upgrade.
      const version = db.version + 1;
      db.close();
      const upgrading = indexedDB.open(database, version);
      upgrading.onupgradeneeded = () => upgrading.result.createObjectStore(store);
      db = await request(upgrading);
    }
    const reading = db.transaction(store, "readonly");
    const objects = reading.objectStore(store);
    const [keys, values] = await Promise.all([request(objects.getAllKeys()),
      request(objects.getAll())]);
    return new IndexedDBStorage(db, store, new Map(keys.map((key, i) => [key, values[i]])));
  }

  constructor(db, store, items) {
    this._db = db;
    this._store = store;
    this._items = items;
    this._pending = [];
  }

  get(key) {
    return this._items.has(key) ? this._items.get(key) : null;
  }

  set(key, text) {
    if (this._items.has(key) && this._items.get(key) === String(text)) return;
    this._items.set(key, String(text));
    let transaction;
    try {
      transaction = this._db.transaction(this._store, "readwrite", { durability: "strict" });
    } catch {
      transaction = this._db.transaction(this._store, "readwrite");
    }
    // add, not put: an entry another tab committed first is never replaced (flush rejects).
    transaction.objectStore(this._store).add(String(text), key);
    const written = done(transaction);
    // A write that failed is forgotten in memory too: the client then refuses to report
    // (its secret "disappeared") instead of using a secret that is not on disk.
    written.catch(() => {
      if (this._items.get(key) === String(text)) this._items.delete(key);
    });
    this._pending.push(written);
  }

  /** Resolves when every write so far is committed; rejects with the first failure. */
  async flush() {
    const pending = this._pending;
    this._pending = [];
    await Promise.all(pending);
  }

  /** Close the database connection (after flush()). */
  close() {
    this._db.close();
  }
}
