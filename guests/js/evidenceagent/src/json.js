// Reading parsed JSON as serde_json's `Value` indexing does: a missing key,
// or a key of something that is not an object, is null.

/** `v[key]` when `v` is an object holding it, else null. */
export function at(v, ...keys) {
  for (const k of keys) {
    if (v === null || typeof v !== 'object' || Array.isArray(v) || !Object.hasOwn(v, k)) return null;
    v = v[k];
  }
  return v === undefined ? null : v;
}

/** `as_str()`: the string, or undefined. */
export const str = (v) => (typeof v === 'string' ? v : undefined);

/** `is_null()`. */
export const isNull = (v) => v === null || v === undefined;

/** serde_json's compact display of a value. */
export const display = (v) => JSON.stringify(v);
