/**
 * `fn` over `items`, at most `limit` at a time, results in input order. After the first `fn` that throws, no
 * further item is started and the call rejects with that error (calls already started finish on their own).
 * Used by the OpenMemory adapter's fact lookups, `memgate eval`'s candidate fetching and the playground's eval.
 */
export async function mapLimit<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  let failed = false;
  const worker = async () => {
    while (!failed && next < items.length) {
      const i = next++;
      try {
        out[i] = await fn(items[i] as T, i);
      } catch (err) {
        failed = true;
        throw err;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker));
  return out;
}
