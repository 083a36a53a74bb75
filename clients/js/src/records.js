// Records to cells: the public categories of the server's domain, encoded like the server's
// Domain.encode (C order, first column slowest) -- the Python client's records.py.

import { ValueError, repr } from "./errors.js";

function isMissing(value) {
  return value === null || value === undefined ||
    (typeof value === "number" && Number.isNaN(value));
}

// Categories are JSON scalars; a Map keyed by type and value keeps 1 and "1" apart.
function key(value) {
  return `${typeof value}:${String(value)}`;
}

/** Column -> category code lookups (categories: an object column -> array of categories). */
export class Categories {
  constructor(categories) {
    if (typeof categories !== "object" || categories === null || Array.isArray(categories) ||
        Object.keys(categories).length === 0) {
      throw new ValueError("categories must be a non-empty mapping column -> list of " +
        "categories, as the server's Domain was built with.");
    }
    this.columns = [];
    this.codes = [];
    this.sizes = [];
    for (const [column, values] of Object.entries(categories)) {
      if (!Array.isArray(values)) {
        throw new ValueError(`the categories of column ${repr(column)} must be a list (their ` +
          `order fixes the cell index), got ${repr(values)}.`);
      }
      if (values.length === 0) throw new ValueError(`column ${repr(column)} has no categories.`);
      const lookup = new Map();
      values.forEach((value, code) => {
        if (isMissing(value)) {
          throw new ValueError(`column ${repr(column)} has a missing value among its ` +
            "categories.");
        }
        if (!["string", "number", "boolean"].includes(typeof value)) {
          throw new ValueError(`the categories of column ${repr(column)} must be strings, ` +
            `numbers or booleans; ${repr(value)} is not.`);
        }
        if (lookup.has(key(value))) {
          throw new ValueError(`column ${repr(column)} has the duplicate category ` +
            `${repr(value)}.`);
        }
        lookup.set(key(value), code);
      });
      this.columns.push(column);
      this.codes.push(lookup);
      this.sizes.push(values.length);
    }
    this.size = this.sizes.reduce((a, b) => a * b, 1);
  }

  /** The flat C-order cell index of one record (first column slowest). */
  encode(record) {
    let cell = 0;
    this.codesOf(record).forEach((code, i) => { cell = cell * this.sizes[i] + code; });
    return cell;
  }

  /** The category code of each column of one record, in column order. */
  codesOf(record) {
    let values;
    if (Array.isArray(record)) {
      if (record.length !== this.columns.length) {
        throw new ValueError(`the record has ${record.length} values but the domain has ` +
          `${this.columns.length} columns ${repr(this.columns)}.`);
      }
      values = record;
    } else if (typeof record === "object" && record !== null) {
      const missing = this.columns.filter((c) => !Object.hasOwn(record, c));
      if (missing.length) {
        throw new ValueError(`the record has no value for column(s) ${repr(missing)}; it has ` +
          `${repr(Object.keys(record).sort())}.`);
      }
      values = this.columns.map((c) => record[c]);
    } else if (this.columns.length === 1) {
      values = [record];
    } else {
      throw new ValueError(`a record must be a dict column -> value or a list of ` +
        `${this.columns.length} values in the order ${repr(this.columns)}, got ${repr(record)}.`);
    }
    return values.map((value, i) => {
      const column = this.columns[i];
      if (isMissing(value)) {
        throw new ValueError(`column ${repr(column)} has a missing value (None/NaN); every ` +
          "record needs one of the declared categories.");
      }
      const code = this.codes[i].get(key(value));
      if (code === undefined) {
        const shown = [...this.codes[i].keys()].slice(0, 10)
          .map((k) => k.slice(k.indexOf(":") + 1));
        throw new ValueError(`column ${repr(column)} has the value ${repr(value)}, which is not ` +
          `among its categories ${repr(shown)}${this.codes[i].size > 10 ? " ..." : ""}.`);
      }
      return code;
    });
  }
}
