/**
 * "Did you mean …?" for configuration files: the keys a zod schema accepts at a path, and the closest of them to a
 * misspelt key (`budgt` → `budget`, `topk` → `topK`).
 */
import type { z } from "zod";
import type { Path } from "./yaml";

/** Edit distance with adjacent transpositions (optimal string alignment), case-insensitive. */
export function editDistance(a: string, b: string): number {
  const s = a.toLowerCase();
  const t = b.toLowerCase();
  const d: number[][] = Array.from({ length: s.length + 1 }, (_, i) =>
    Array.from({ length: t.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  const at = (i: number, j: number): number => d[i]?.[j] ?? Number.POSITIVE_INFINITY;
  for (let i = 1; i <= s.length; i++) {
    const row = d[i] ?? [];
    for (let j = 1; j <= t.length; j++) {
      const cost = s[i - 1] === t[j - 1] ? 0 : 1;
      let best = Math.min(at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + cost);
      if (i > 1 && j > 1 && s[i - 1] === t[j - 2] && s[i - 2] === t[j - 1])
        best = Math.min(best, at(i - 2, j - 2) + 1);
      row[j] = best;
    }
  }
  return at(s.length, t.length);
}

/**
 * The candidate closest to `word`, when it is close enough to be a typo: at most 1 edit for words up to 4
 * characters, 2 up to 8, 3 beyond. Ties go to the candidate listed first.
 */
export function closest(word: string, candidates: Iterable<string>): string | undefined {
  const limit = word.length <= 4 ? 1 : word.length <= 8 ? 2 : 3;
  let best: { name: string; distance: number } | undefined;
  for (const name of candidates) {
    const distance = editDistance(word, name);
    if (distance <= limit && (best === undefined || distance < best.distance)) best = { name, distance };
  }
  return best?.name;
}

interface Def {
  type: string;
  innerType?: z.ZodType;
  in?: z.ZodType;
  shape?: Record<string, z.ZodType>;
  element?: z.ZodType;
  options?: z.ZodType[];
}
const defOf = (schema: z.ZodType): Def => (schema as unknown as { _zod: { def: Def } })._zod.def;

/** The object schemas `schema` may be at `path` (through defaults, optionals, pipes, arrays and unions). */
function objectsAt(schema: z.ZodType, path: Path): Array<Record<string, z.ZodType>> {
  const def = defOf(schema);
  switch (def.type) {
    case "default":
    case "optional":
    case "nullable":
    case "prefault":
    case "readonly":
      return def.innerType ? objectsAt(def.innerType, path) : [];
    case "pipe":
      return def.in ? objectsAt(def.in, path) : [];
    case "union":
      return (def.options ?? []).flatMap((o) => objectsAt(o, path));
    case "array": {
      const [head, ...rest] = path;
      return typeof head === "number" && def.element ? objectsAt(def.element, rest) : [];
    }
    case "object": {
      const shape = def.shape ?? {};
      if (path.length === 0) return [shape];
      const [head, ...rest] = path;
      const child = typeof head === "string" && Object.hasOwn(shape, head) ? shape[head] : undefined;
      return child ? objectsAt(child, rest) : [];
    }
    default:
      return [];
  }
}

/** The keys the schema accepts in the object at `path` (the parent of an unknown key). */
export function knownKeysAt(schema: z.ZodType, path: Path): string[] {
  return [...new Set(objectsAt(schema, path).flatMap((shape) => Object.keys(shape)))];
}

/** The key the schema accepts at `parent` that an unknown `key` most likely meant, or undefined. */
export function suggestKey(schema: z.ZodType, parent: Path, key: string): string | undefined {
  return closest(key, knownKeysAt(schema, parent));
}
