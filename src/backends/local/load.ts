import { readFile } from "node:fs/promises";
import { formatIssues, type MemoryRecord, memoryRecordSchema } from "./schema";

/**
 * Loading the local backend's data: a JSONL file (MEMGATE_LOCAL_DATA), one memory per line.
 * Blank lines and lines starting with `//` or `#` are skipped. The first bad line stops loading with an error
 * naming the place and the field, e.g. `config/demo-memories.jsonl:7: timestamp: invalid ISO 8601 …`.
 * Ids are unique in the whole store (not only per user), so `delete(id)` is never ambiguous; a repeated id
 * names both lines.
 */

export type LocalDataErrorCode = "unreadable" | "invalid_json" | "invalid_record" | "duplicate_id";

/** Bad local data: a file that cannot be loaded, or a record `LocalStore.add` refuses. */
export class LocalDataError extends Error {
  readonly code: LocalDataErrorCode;
  /** The file, `records` for in-memory input, or `add`. */
  readonly source: string;
  /** 1-based line of the file (or index of the array); undefined when the whole source is at fault. */
  readonly line: number | undefined;

  constructor(
    message: string,
    opts: { code: LocalDataErrorCode; source: string; line?: number; cause?: unknown },
  ) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = "LocalDataError";
    this.code = opts.code;
    this.source = opts.source;
    this.line = opts.line;
  }
}

interface Located {
  value: unknown;
  /** Line number (file) or index (array). */
  at: number;
}

type Where = (at: number) => string;

function validate(items: Iterable<Located>, source: string, where: Where): MemoryRecord[] {
  const records: MemoryRecord[] = [];
  const firstSeen = new Map<string, number>();
  for (const { value, at } of items) {
    const parsed = memoryRecordSchema.safeParse(value);
    if (!parsed.success) {
      throw new LocalDataError(`${where(at)}: ${formatIssues(parsed.error)}`, {
        code: "invalid_record",
        source,
        line: at,
      });
    }
    const previous = firstSeen.get(parsed.data.id);
    if (previous !== undefined) {
      throw new LocalDataError(
        `${where(at)}: id: duplicate id ${JSON.stringify(parsed.data.id)} (first defined at ${where(previous)})`,
        { code: "duplicate_id", source, line: at },
      );
    }
    firstSeen.set(parsed.data.id, at);
    records.push(parsed.data);
  }
  return records;
}

function* jsonLines(text: string, source: string): Generator<Located> {
  const lines = text.replace(/^\uFEFF/, "").split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const raw = lines[i] ?? "";
    const line = raw.trim();
    if (line === "" || line.startsWith("//") || line.startsWith("#")) continue;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (err) {
      // V8's message may quote the line, i.e. memory content: keep only the position.
      const position = err instanceof Error ? /position (\d+)/.exec(err.message) : null;
      const column =
        position?.[1] === undefined ? "" : ` at column ${Number(position[1]) + raw.indexOf(line) + 1}`;
      // No `cause`: it would carry that quote into logs.
      throw new LocalDataError(`${source}:${i + 1}: invalid JSON${column}`, {
        code: "invalid_json",
        source,
        line: i + 1,
      });
    }
    yield { value, at: i + 1 };
  }
}

/** Parses JSONL text; `source` names it in errors (normally the file path). */
export function parseMemoriesJsonl(text: string, source: string): MemoryRecord[] {
  return validate(jsonLines(text, source), source, (line) => `${source}:${line}`);
}

/** Validates records given in code (tests, fixtures); errors name `records[i]`. */
export function validateRecords(values: readonly unknown[], source = "records"): MemoryRecord[] {
  return validate(
    values.map((value, at) => ({ value, at })),
    source,
    (at) => `${source}[${at}]`,
  );
}

/** Reads and parses a JSONL data file. Throws `LocalDataError` (never anything else). */
export async function loadMemoriesFile(file: string): Promise<MemoryRecord[]> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (err) {
    const code = err instanceof Error && "code" in err ? String(err.code) : "read error";
    throw new LocalDataError(`${file}: cannot read the local memory file (${code})`, {
      code: "unreadable",
      source: file,
      cause: err,
    });
  }
  return parseMemoriesJsonl(text, file);
}
