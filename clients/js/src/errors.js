// The error the client throws for a refused specification or value (Python's ValueError:
// the same messages, naming the field and the value), and Python-like value display.

/** A refused specification, value or category; the message names the field and the value. */
export class ValueError extends Error {
  constructor(message) {
    super(message);
    this.name = "ValueError";
  }
}

/** A value as Python's repr shows it in the Python client's messages (strings quoted). */
export function repr(value) {
  if (typeof value === "string") {
    // Python quotes with ' unless the text holds ' and no ".
    return value.includes("'") && !value.includes('"') ? `"${value}"` : `'${value}'`;
  }
  if (typeof value === "bigint") return value.toString();
  if (value === undefined) return "None";
  if (value === null) return "None";
  if (value === true) return "True";
  if (value === false) return "False";
  if (typeof value === "number") {
    if (Number.isNaN(value)) return "nan";
    if (!Number.isFinite(value)) return value > 0 ? "inf" : "-inf";
    return String(value);
  }
  if (Array.isArray(value)) return `[${value.map(repr).join(", ")}]`;
  if (typeof value === "object" && Object.getPrototypeOf(value) === Object.prototype) {
    return `{${Object.entries(value).map(([k, v]) => `${repr(k)}: ${repr(v)}`).join(", ")}}`;
  }
  try {
    const text = JSON.stringify(value);
    return text === undefined ? String(value) : text;
  } catch {
    return String(value);
  }
}

/** Python's repr(str(value)[:80]): the start of a long value, as the messages show it. */
export function shortRepr(value) {
  return repr(repr(value).slice(0, 80));
}
