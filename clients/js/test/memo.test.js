// The memoizing kinds' PRF against the server's (SipHash-2-4 words, PRF words, and the PRF
// part of a report for random secrets, make_fixtures.py's memo.json), and their device state:
// reports repeat under one secret, survive a rebuilt Randomizer, and a damaged or foreign
// state is refused rather than replaced.
import assert from "node:assert/strict";
import { test } from "node:test";
import { LocalStorage, MemoryStorage, Randomizer, ValueError, reportToJSON }
  from "../src/index.js";
import { prf, siphash24 } from "../src/memo.js";
import { fixture } from "./fixtures.js";

const bytes = (hex) => Uint8Array.from(hex.match(/../g) ?? [], (pair) => parseInt(pair, 16));
const cases = fixture("memo");

test("SipHash-2-4 is the server's on messages of 0 to 15 bytes", () => {
  const vectors = cases.filter((c) => c.case === "siphash");
  assert.equal(vectors.length, 16);
  for (const { key, message, word } of vectors) {
    assert.equal(siphash24(bytes(key), bytes(message)), BigInt(word), `message ${message}`);
  }
  // The paper's vector (Aumasson and Bernstein 2012, appendix A).
  assert.equal(siphash24(bytes("000102030405060708090a0b0c0d0e0f"),
    bytes("000102030405060708090a0b0c0d0e")), 0xa129ca6149be45e5n);
});

test("PRF words are the server's (prf_words)", () => {
  for (const { secret, label, value, counter, word } of cases.filter((c) => c.case === "prf")) {
    assert.equal(prf(bytes(secret), label, value, counter), BigInt(word));
  }
  assert.throws(() => prf(new Uint8Array(16), "grr-perm", 2 ** 24, 0), /\[0, 2\^24\)/);
});

for (const { spec, secrets, values, reports } of cases.filter((c) => c.case === "derive")) {
  test(`permanent responses are the server's: ${spec}`, () => {
    const { derive } = Randomizer.fromJSON(spec, { state: new MemoryStorage() })._derive;
    values.forEach((value, i) => {
      assert.equal(reportToJSON(derive(value, bytes(secrets[i]))), reports[i],
        `value ${value}, secret ${secrets[i]}`);
    });
  });
}

const GRR = fixture("laws").find((law) => law.name === "longitudinal_l_grr_5").spec;
const DBIT = '{"version": 1, "mechanism": "dbitflip_pm", "n_cells": 6, "epsilon": 1.0, ' +
  '"n_sampled": 2}';

test("one secret per device: reports repeat, and a rebuilt Randomizer reuses it", () => {
  const storage = new MemoryStorage();
  const first = Randomizer.fromJSON(DBIT, { state: storage });
  const report = reportToJSON(first.privatize(3));
  const text = storage.get("sklearn-ldp-client-state");
  for (let i = 0; i < 50; i++) assert.equal(reportToJSON(first.privatize(3)), report);
  const again = Randomizer.fromJSON(DBIT, { state: storage });
  assert.equal(reportToJSON(again.privatize(3)), report);
  assert.equal(storage.get("sklearn-ldp-client-state"), text); // nothing re-drawn
  const secret = JSON.parse(text).state.secret;
  assert.match(secret, /^[0-9a-f]{32}$/);
  assert.equal(reportToJSON(first._derive.derive(3, bytes(secret))), report);
});

test("the longitudinal rounds randomize around the permanent response", () => {
  const storage = new MemoryStorage();
  const randomizer = Randomizer.fromJSON(GRR, { state: storage });
  const secret = bytes(JSON.parse((randomizer.privatize(1), storage.get(
    "sklearn-ldp-client-state"))).state.secret);
  const permanent = randomizer._derive.derive(1, secret);
  const counts = new Array(5).fill(0);
  for (let i = 0; i < 2000; i++) counts[randomizer.privatize(1)] += 1;
  // keep_instant is about e / (e + 4) = 0.40 at epsilon_1 = 1: the permanent response is the
  // mode by far (the others get 0.15 each).
  assert.equal(counts.indexOf(Math.max(...counts)), permanent);
});

test("state is required, checked, and never silently replaced", () => {
  assert.throws(() => Randomizer.fromJSON(DBIT), /memoizes permanent responses: pass state=/);
  assert.throws(() => Randomizer.fromJSON(DBIT, { state: {} }), /get\(key\) and set/);
  assert.throws(() => Randomizer.fromJSON(DBIT, { state: new MemoryStorage(), stateKey: "" }),
    /stateKey/);
  assert.throws(() => Randomizer.fromJSON(
    '{"version": 1, "mechanism": "oue", "epsilon": 1.0, "n_inputs": 4, "params": {}}',
    { state: new MemoryStorage() }), /keeps no client state/);

  const storage = new MemoryStorage();
  const randomizer = Randomizer.fromJSON(DBIT, { state: storage });
  randomizer.privatize(0);
  const text = storage.get("sklearn-ldp-client-state");
  const content = JSON.parse(text);
  const refusals = [
    ["{\"format\"", /not valid JSON/],
    ["[1]", /not a client state/],
    [JSON.stringify({ ...content, version: 2 }), /version 2/],
    [JSON.stringify({ ...content, state: { secret: "00" } }), /32 lowercase hex/],
    [JSON.stringify({ ...content, state: { secret: content.state.secret.toUpperCase() } }),
      /32 lowercase hex/],
    [JSON.stringify({ ...content, spec: "{}" }), /another specification/],
  ];
  for (const [edited, message] of refusals) {
    storage.set("sklearn-ldp-client-state", edited);
    assert.throws(() => randomizer.privatize(0), (error) =>
      error instanceof ValueError && message.test(error.message));
  }
  // Gone after use: refused (a new secret would give new permanent responses).
  storage._items.clear();
  assert.throws(() => randomizer.privatize(0), /disappeared/);
  // Another specification under the same key: refused.
  storage.set("sklearn-ldp-client-state", text);
  assert.throws(() => Randomizer.fromJSON(DBIT.replace('"epsilon": 1.0', '"epsilon": 2.0'),
    { state: storage }).privatize(0), /another specification/);
  // Values are checked before the state is touched.
  assert.throws(() => Randomizer.fromJSON(DBIT, { state: new MemoryStorage() }).privatize(6),
    /cell index/);
  const counter = Randomizer.fromJSON('{"version": 1, "mechanism": "1bitmean_pm", ' +
    '"max_value": 10.0, "epsilon": 1.0, "n_segments": 4}', { state: new MemoryStorage() });
  for (const bad of [-0.1, 10.5, NaN, "3", null]) {
    assert.throws(() => counter.privatize(bad), /the counter must/);
  }
});

test("LocalStorage keeps the secret in a Web Storage object", () => {
  const items = new Map();
  const webStorage = { getItem: (k) => (items.has(k) ? items.get(k) : null),
    setItem: (k, v) => items.set(k, String(v)) };
  const randomizer = Randomizer.fromJSON(DBIT,
    { state: new LocalStorage(webStorage), stateKey: "survey-1" });
  const report = reportToJSON(randomizer.privatize(2));
  assert.deepEqual([...items.keys()], ["survey-1"]);
  const again = Randomizer.fromJSON(DBIT, { state: new LocalStorage(webStorage),
    stateKey: "survey-1" });
  assert.equal(reportToJSON(again.privatize(2)), report);
  assert.throws(() => new LocalStorage(undefined), /Web Storage/);
});
