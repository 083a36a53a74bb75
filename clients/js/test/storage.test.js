// IndexedDBStorage outside a browser: refused with a ValueError naming the alternatives
// (Node has no IndexedDB; tests/test_browser_e2e.py runs it in headless Chromium).
import assert from "node:assert/strict";
import { test } from "node:test";
import { IndexedDBStorage, ValueError } from "../src/index.js";

test("IndexedDBStorage.open needs IndexedDB and names the alternatives", async () => {
  await assert.rejects(IndexedDBStorage.open(), (error) => error instanceof ValueError &&
    /needs IndexedDB.*LocalStorage, MemoryStorage/.test(error.message));
  await assert.rejects(IndexedDBStorage.open({ indexedDB: { open() {} }, database: "" }),
    (error) => error instanceof ValueError && /database must be a non-empty string/.test(
      error.message));
});
