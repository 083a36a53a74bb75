// sklearn-ldp-client: rebuild a local differential privacy randomizer from the server's JSON
// specification and privatize one record on the device, with exact samplers.

export { ValueError } from "./errors.js";
export { ExactRandom } from "./random.js";
export { RANDOMIZERS, Randomizer, reportToJSON } from "./randomizer.js";
export { SPEC_VERSION } from "./spec.js";
export { LocalStorage, MemoryStorage } from "./memo.js";
export { IndexedDBStorage } from "./storage.js";
