// Python's float operations the server's formulas use, on JavaScript doubles (the same IEEE
// arithmetic): round() to an integer (halves to even) and math.nextafter(x, 0).

/** Python's round(x) for a double: the nearest integer, halves to even. */
export function roundHalfEven(x) {
  const floor = Math.floor(x);
  const diff = x - floor;
  if (diff !== 0.5) return diff < 0.5 ? floor : floor + 1;
  return floor % 2 === 0 ? floor : floor + 1;
}

/** The next double toward 0 of a positive double (Python's math.nextafter(x, 0.0)). */
export function nextDown(x) {
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, x);
  view.setBigUint64(0, view.getBigUint64(0) - 1n);
  return view.getFloat64(0);
}

/** The next double away from 0 of a positive double (Python's math.nextafter(x, inf)). */
export function nextUp(x) {
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, x);
  view.setBigUint64(0, view.getBigUint64(0) + 1n);
  return view.getFloat64(0);
}
