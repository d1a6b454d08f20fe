/**
 * A copy of `s` that holds no reference to a larger string. V8 represents a slice of 13 code units or more as
 * a view into its parent, so a slice kept as a cache key keeps the whole text it was cut from (a memory of
 * 200 KB for a 20-letter word) alive as long as the cache does. Concatenating makes a new string that slicing
 * then flattens into a fresh copy of just these characters. For what long-lived caches keep, not hot paths.
 */
export function detached(s: string): string {
  return s.length < 13 ? s : ` ${s}`.slice(1);
}
