// The multi_attribute kind: SPL, SMP and RS+FD records of several categorical attributes --
// the Python client's multi_attribute.py (RS+FD with the "record" neighbourhood; the
// "attribute" neighbourhood bisects a budget in floating point with the platform's log, which
// the Python client takes).

import { ValueError, repr, shortRepr } from "./errors.js";
import { packed } from "./exact.js";
import { splitBudget } from "./marginals.js";
import { makeRandomizedResponse, makeUnary, unaryNumerators } from "./oracles.js";
import { Categories } from "./records.js";
import { checkBudget, checkFields, isPlainObject } from "./spec.js";

const MAX_ATTRIBUTES = 1024;
const MAX_CELLS = 2 ** 24;
const MULTI_PROTOCOLS = { spl: ["grr", "oue"], smp: ["grr", "oue"],
  rsfd: ["grr", "oue_z", "oue_r"] };

function checkShape(shape, kind) {
  if (!Array.isArray(shape) || shape.length < 1 || shape.length > MAX_ATTRIBUTES) {
    throw new ValueError(`shape of the ${repr(kind)} specification must be a list of 1 to ` +
      `${MAX_ATTRIBUTES} category counts, got ${shortRepr(shape)}.`);
  }
  for (const size of Array.from(shape)) {
    if (typeof size !== "number" || !Number.isInteger(size) || size < 2 || size > MAX_CELLS) {
      throw new ValueError(`shape of the ${repr(kind)} specification must hold integers in ` +
        `[2, ${MAX_CELLS}], got ${repr(size)}.`);
    }
  }
  const total = shape.reduce((a, b) => a + b, 0);
  if (total > MAX_CELLS) {
    throw new ValueError(`shape of the ${repr(kind)} specification declares ${total} ` +
      `categories in all, more than ${MAX_CELLS}.`);
  }
  return [...shape];
}

function codesOrCheck(record, sizes) {
  if (!Array.isArray(record) || record.length !== sizes.length) {
    throw new ValueError(`a 'multi_attribute' record is a list of ${sizes.length} category ` +
      `codes (or pass categories= to give values), got ${repr(record)}.`);
  }
  Array.from(record).forEach((code, column) => {
    if (typeof code !== "number" || !Number.isInteger(code) || code < 0 || code >= sizes[column]) {
      throw new ValueError(`column ${column} of the record has the code ${repr(code)}, not an ` +
        `integer in [0, ${sizes[column]}).`);
    }
  });
  return [...record];
}

export function multiAttribute(spec) {
  const kind = "multi_attribute";
  checkFields(spec, kind, ["epsilon", "shape"], ["params"]);
  const epsilon = checkBudget(spec.epsilon, "epsilon", kind);
  const shape = checkShape(spec.shape, kind);
  const params = spec.params ?? {};
  const allowed = ["protocol", "oracle", "neighbourhood"];
  if (!isPlainObject(params) || Object.keys(params).some((key) => !allowed.includes(key))) {
    throw new ValueError("params of the 'multi_attribute' specification must hold " +
      `'protocol', 'oracle', 'neighbourhood' only, got ${repr(params)}.`);
  }
  const protocol = params.protocol ?? "smp";
  if (typeof protocol !== "string" || !Object.hasOwn(MULTI_PROTOCOLS, protocol)) {
    throw new ValueError(`params['protocol'] must be one of ['rsfd', 'smp', 'spl'], got ` +
      `${repr(protocol)}.`);
  }
  const oracle = params.oracle ?? "grr";
  if (!MULTI_PROTOCOLS[protocol].includes(oracle)) {
    throw new ValueError(`params['oracle'] must be one of ` +
      `(${MULTI_PROTOCOLS[protocol].map(repr).join(", ")}) for protocol ${repr(protocol)}, ` +
      `got ${repr(oracle)}.`);
  }
  const neighbourhood = params.neighbourhood ?? "record";
  if (neighbourhood !== "record" && neighbourhood !== "attribute") {
    throw new ValueError("params['neighbourhood'] must be 'record' or 'attribute', got " +
      `${repr(neighbourhood)}.`);
  }
  if (neighbourhood === "attribute" && protocol !== "rsfd") {
    throw new ValueError("params['neighbourhood']='attribute' applies to protocol 'rsfd' only.");
  }
  if (neighbourhood === "attribute") {
    throw new ValueError("params['neighbourhood']='attribute' (RS+FD's bisected budget) is " +
      "randomized by the Python client (sklearn_ldp.deploy.client), not by this one.");
  }
  const d = shape.length;
  const unary = oracle !== "grr";
  const oracles = protocol === "spl" ? splitBudget(epsilon, shape, unary)[1]
    : shape.map((size) => (unary ? makeUnary("oue", size, epsilon)
      : makeRandomizedResponse(size, epsilon)));
  const widths = shape.map((size) => (unary ? Math.ceil(size / 8) : 1));
  const asList = (report) => (Array.isArray(report) ? report : [report]);
  let privatizeCodes;
  if (protocol === "spl") {
    privatizeCodes = (codes, rng) => codes.flatMap((code, i) => asList(oracles[i](code, rng)));
  } else if (protocol === "smp") {
    const widest = Math.max(...widths);
    privatizeCodes = (codes, rng) => {
      const chosen = rng.belowNumber(d);
      const report = asList(oracles[chosen](codes[chosen], rng));
      return [chosen, ...report, ...new Array(widest - report.length).fill(0)];
    };
  } else {
    const q = unary ? Number(unaryNumerators("oue", epsilon)[1]) : null;
    const fake = (i, rng) => {
      if (oracle === "grr") return [rng.belowNumber(shape[i])];
      if (oracle === "oue_z") { // unary encoding of no value: every bit 1 with q
        const ones = [];
        for (let j = 0; j < shape[i]; j++) if (rng.bernoulli52(q)) ones.push(j);
        return packed(ones, shape[i]);
      }
      return oracles[i](rng.belowNumber(shape[i]), rng); // oue_r: of a uniform value
    };
    privatizeCodes = (codes, rng) => {
      const chosen = rng.belowNumber(d);
      return codes.flatMap((code, i) => (i === chosen ? asList(oracles[i](code, rng))
        : fake(i, rng)));
    };
  }
  let lookup = null;
  const bind = (categories) => {
    lookup = new Categories(categories);
    if (lookup.sizes.join() !== shape.join()) {
      throw new ValueError(`the categories have ${repr(lookup.sizes)} values per column but ` +
        `the specification declares ${repr(shape)}: they are not the server's.`);
    }
  };
  const encode = (record) => (lookup !== null ? lookup.codesOf(record)
    : codesOrCheck(record, shape));
  const privatize = (value, rng) => privatizeCodes(encode(value), rng);
  return [d, privatize, { takesValues: true, bind, encode }];
}

/** The multi-attribute kind. */
export const MULTI_ATTRIBUTE_KINDS = { multi_attribute: multiAttribute };
