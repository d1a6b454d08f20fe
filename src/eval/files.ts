import { readdir, stat } from "node:fs/promises";
import { join } from "node:path";
import { LocalDataError, loadMemoriesFile, type MemoryRecord } from "../backends/local";
import { type GoldenQuestion, GoldenSetError, loadGoldenFile } from "./golden";

/**
 * A golden set given as a file or a directory. A directory holds one pair of files per user (the long
 * conversations of eval/golden/long/: `<user>.questions.jsonl`, `<user>.memories.jsonl`); `--golden` takes every
 * `*.questions.jsonl` in it and `--data` every `*.memories.jsonl`, sorted by name, so the order of questions
 * (and of the report's diffs) never depends on the file system.
 */

export const QUESTIONS_SUFFIX = ".questions.jsonl";
export const MEMORIES_SUFFIX = ".memories.jsonl";

/**
 * `path` itself when it is a file; every file in it ending in `suffix`, by name, when it is a directory (an
 * error when there is none). Undefined when `path` does not exist (the loader names it as it always has).
 */
export async function filesOf(path: string, suffix: string): Promise<string[] | undefined> {
  const info = await stat(path).catch(() => undefined);
  if (info === undefined) return undefined;
  if (!info.isDirectory()) return [path];
  const names = (await readdir(path)).filter((n) => n.endsWith(suffix)).sort();
  return names.map((n) => join(path, n));
}

/** The questions of a golden set file or directory, file by file; an id is unique across all the files. */
export async function loadGolden(path: string): Promise<{ questions: GoldenQuestion[]; files: string[] }> {
  const files = (await filesOf(path, QUESTIONS_SUFFIX)) ?? [path];
  if (files.length === 0)
    throw new GoldenSetError(`${path}: no *${QUESTIONS_SUFFIX} files in this directory`);
  const questions: GoldenQuestion[] = [];
  const seen = new Map<string, string>();
  for (const file of files) {
    for (const q of await loadGoldenFile(file)) {
      const first = seen.get(q.id);
      if (first !== undefined)
        throw new GoldenSetError(`${file}: id: duplicate id "${q.id}" (first in ${first})`);
      seen.set(q.id, file);
      questions.push(q);
    }
  }
  return { questions, files };
}

/**
 * The local backend's records from a file or every `*.memories.jsonl` of a directory, for one store: ids are
 * unique across the files (as within one), so a repeated id names both files.
 */
export async function loadMemories(path: string): Promise<{ records: MemoryRecord[]; files: string[] }> {
  const files = (await filesOf(path, MEMORIES_SUFFIX)) ?? [path];
  if (files.length === 0) {
    throw new LocalDataError(`${path}: no *${MEMORIES_SUFFIX} files in this directory`, {
      code: "unreadable",
      source: path,
    });
  }
  const records: MemoryRecord[] = [];
  const seen = new Map<string, string>();
  for (const file of files) {
    for (const r of await loadMemoriesFile(file)) {
      const first = seen.get(r.id);
      if (first !== undefined) {
        throw new LocalDataError(
          `${file}: id: duplicate id ${JSON.stringify(r.id)} (first defined in ${first})`,
          {
            code: "duplicate_id",
            source: file,
          },
        );
      }
      seen.set(r.id, file);
      records.push(r);
    }
  }
  return { records, files };
}
