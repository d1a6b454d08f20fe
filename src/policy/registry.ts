import { join } from "node:path";
import { addLines, formatProblem } from "../config/yaml";
import type { Logger } from "../logging/logger";
import { sha256Hex } from "./canonical";
import {
  type CompiledPolicy,
  compilePolicyText,
  PolicyFileTooLarge,
  readPolicyText,
  TOO_LARGE_MESSAGE,
} from "./compile";
import type { PolicyRegistry, PolicyStatus, RejectedFile } from "./registry-types";
import { byCodeUnits, type DirWatcher, listPolicyFiles, serialized, watchDirectory } from "./watch";

export type RegistryEventType = "loaded" | "reloaded" | "rejected" | "retired";

/** One change of the registry, for logs and metrics. `error` holds formatted problem line(s). */
export interface RegistryEvent {
  type: RegistryEventType;
  name?: string;
  file: string;
  version?: number;
  hash?: string;
  error?: string;
}

export interface PolicyRegistryOptions {
  /** The policy directory (MEMGATE_POLICY_DIR); read non-recursively. */
  dir: string;
  logger: Logger;
  /** Watch the directory and reload on change (default false). */
  watch?: boolean;
  /** Quiet time after the last file-system event before reloading (default 100 ms). */
  debounceMs?: number;
  onEvent?: (e: RegistryEvent) => void;
}

export const DEFAULT_DEBOUNCE_MS = 100;

type Outcome = { ok: true; compiled: CompiledPolicy } | { ok: false; error: string };

/** One policy file as last read; `contentHash` lets an unchanged file be skipped. */
interface FileRecord {
  file: string;
  contentHash: string;
  /** The file's text, for the line of a problem found after compiling (a version that does not go up). */
  text: string;
  outcome: Outcome;
}

type Entry = PolicyStatus & { compiled: CompiledPolicy };

/** Everything readers see. Replaced as a whole after each reload, never mutated. */
interface State {
  files: ReadonlyMap<string, FileRecord>;
  policies: ReadonlyMap<string, Entry>;
  rejected: ReadonlyMap<string, RejectedFile>;
}

/**
 * Loads every policy file of `opts.dir` and, with `watch`, keeps them current.
 *
 * - Same name in two files: the file whose name sorts first (code-unit order) wins; the other is rejected.
 * - A changed file that fails validation is rejected; the previous version keeps serving with `lastError`.
 * - A changed policy must raise its `version`: a change with the same or a lower version is rejected the same
 *   way (a formatting- or comment-only change, same hash, is no change at all).
 * - A deleted file (or one that now defines another name) retires its policy: `get()` no longer finds it (a
 *   request naming it is answered as for an unknown policy), but `retired()` keeps its last version for the
 *   tenants whose default it is (/readyz says they are degraded), until a file defines that name again.
 * - Reloads are serialized; each builds a new state aside and swaps one reference, so `get()` returns a
 *   whole old or a whole new compiled policy, never a mix.
 *
 * Throws when the directory cannot be read at start; invalid files do not fail start-up (see `list()`).
 */
export async function createPolicyRegistry(opts: PolicyRegistryOptions): Promise<PolicyRegistry> {
  const { dir, logger, onEvent } = opts;
  let state: State = { files: new Map(), policies: new Map(), rejected: new Map() };

  const emit = (e: RegistryEvent): void => {
    const fields = {
      event: `policy.${e.type}`,
      policy: e.name,
      file: e.file,
      version: e.version,
      hash: e.hash,
    };
    if (e.type === "loaded" || e.type === "reloaded") logger.info(fields, `policy ${e.type}`);
    else logger.warn({ ...fields, error: e.error }, `policy ${e.type}`);
    try {
      onEvent?.(e);
    } catch (err) {
      logger.error({ err }, "policy registry onEvent listener threw");
    }
  };

  const runReload = async (): Promise<void> => {
    const { records, changed } = await scan(dir, state.files);
    const { next, events } = reconcile(state, records, changed, new Date().toISOString());
    state = next;
    for (const e of events) emit(e);
  };

  /** Serialized; calls made while a reload waits to start share it (it will read the disk after them). */
  const reload = serialized(runReload);

  let watcher: DirWatcher | undefined;
  if (opts.watch) {
    try {
      watcher = watchDirectory(dir, {
        debounceMs: opts.debounceMs ?? DEFAULT_DEBOUNCE_MS,
        onChange: () => {
          reload().catch((err: unknown) =>
            logger.error({ err, dir }, "policy reload failed; previous policies keep serving"),
          );
        },
        onError: (err) => logger.error({ err, dir }, "policy directory watcher failed"),
      });
    } catch (err) {
      throw new Error(`policy directory "${dir}" cannot be watched (${errCode(err)})`, { cause: err });
    }
  }
  try {
    await reload();
  } catch (err) {
    watcher?.close();
    throw err;
  }

  return {
    get: (name) => {
      const entry = state.policies.get(name);
      return entry?.status === "active" ? entry.compiled : undefined;
    },
    retired: (name) => {
      const entry = state.policies.get(name);
      return entry?.status === "retired" ? entry.compiled : undefined;
    },
    list: () => {
      const policies = [...state.policies.values()]
        .map(({ compiled: _compiled, ...status }) => status)
        .sort((a, b) => byCodeUnits(a.name, b.name));
      const rejected = [...state.rejected.values()].sort((a, b) => byCodeUnits(a.file, b.file));
      return { policies, rejected };
    },
    reload,
    close: () => {
      watcher?.close();
      watcher = undefined;
    },
  };
}

const errCode = (err: unknown): string => (err as NodeJS.ErrnoException).code ?? "unreadable";

/** Reads the policy files; a file whose bytes did not change keeps its previous record (no event). */
async function scan(
  dir: string,
  previous: ReadonlyMap<string, FileRecord>,
): Promise<{ records: FileRecord[]; changed: Set<string> }> {
  const names = await listPolicyFiles(dir);
  const records: FileRecord[] = [];
  const changed = new Set<string>();
  for (const name of names) {
    const rec = await readRecord(join(dir, name), previous);
    if (rec === undefined) continue; // deleted since the listing: its own event triggers another reload
    records.push(rec);
    if (rec !== previous.get(rec.file)) changed.add(rec.file);
  }
  return { records, changed };
}

async function readRecord(
  file: string,
  previous: ReadonlyMap<string, FileRecord>,
): Promise<FileRecord | undefined> {
  let text: string;
  let contentHash: string;
  let outcome: Outcome | undefined;
  try {
    text = await readPolicyText(file);
    contentHash = sha256Hex(text);
  } catch (err) {
    const code = errCode(err);
    if (code === "ENOENT") return undefined;
    text = "";
    contentHash = `unreadable:${code}`;
    outcome = {
      ok: false,
      error: `${file}: ${err instanceof PolicyFileTooLarge ? TOO_LARGE_MESSAGE : `cannot read the file (${code})`}`,
    };
  }
  const prev = previous.get(file);
  if (prev && prev.contentHash === contentHash) return prev;
  return { file, contentHash, text, outcome: outcome ?? compileText(text, file) };
}

function compileText(text: string, file: string): Outcome {
  const result = compilePolicyText(text, file);
  return result.ok ? result : { ok: false, error: result.problems.map(formatProblem).join("\n") };
}

type Claim = { file: string; text: string; outcome: Outcome };

/** Computes the next state from the files read and the previous state, plus the events to emit. */
function reconcile(
  prev: State,
  records: readonly FileRecord[],
  changed: ReadonlySet<string>,
  now: string,
): { next: State; events: RegistryEvent[] } {
  const events: RegistryEvent[] = [];
  const activeNameOfFile = new Map<string, string>();
  for (const p of prev.policies.values()) if (p.status === "active") activeNameOfFile.set(p.file, p.name);

  // Which file defines each name. Records are sorted by file name, so the first claim wins.
  const claims = new Map<string, Claim>();
  const rejected = new Map<string, RejectedFile & { name?: string }>();
  for (const rec of records) {
    const name = rec.outcome.ok ? rec.outcome.compiled.policy.name : activeNameOfFile.get(rec.file);
    const owner = name === undefined ? undefined : claims.get(name);
    if (name !== undefined && owner === undefined) {
      claims.set(name, { file: rec.file, text: rec.text, outcome: rec.outcome });
    } else if (owner !== undefined && rec.outcome.ok) {
      const error = `${rec.file}: policy "${name}" is already defined by ${owner.file} (the file whose name sorts first wins); this file is ignored`;
      rejected.set(rec.file, { file: rec.file, error, at: now, name });
    } else if (!rec.outcome.ok) {
      // Invalid and backing no serving policy (or its name is now defined by a file that sorts first).
      rejected.set(rec.file, { file: rec.file, error: rec.outcome.error, at: now });
    }
  }

  const policies = new Map<string, Entry>();
  for (const [name, claim] of claims) {
    const old = prev.policies.get(name);
    const fileChanged = changed.has(claim.file);
    if (!claim.outcome.ok) {
      // Only a file that backed this active policy claims it while invalid, so `old` exists.
      if (!old) continue;
      if (!fileChanged) {
        policies.set(name, old);
        continue;
      }
      const error = claim.outcome.error;
      policies.set(name, { ...old, lastError: error, rejectedChanges: old.rejectedChanges + 1 });
      events.push({ type: "rejected", name, file: claim.file, error });
      continue;
    }
    const fresh = claim.outcome.compiled;
    const sameAsOld = old !== undefined && old.hash === fresh.hash;
    if (old?.status === "active" && !sameAsOld && fresh.policy.version <= old.version) {
      if (!fileChanged && old.file === claim.file) {
        policies.set(name, old); // refused before, unchanged since
        continue;
      }
      const error = versionNotRaised(claim, fresh.policy.version, old.version);
      policies.set(name, { ...old, lastError: error, rejectedChanges: old.rejectedChanges + 1 });
      events.push({ type: "rejected", name, file: claim.file, version: fresh.policy.version, error });
      continue;
    }
    if (old && sameAsOld && old.file === claim.file && old.status === "active" && old.lastError === null) {
      policies.set(name, old); // unchanged, or only comments/formatting changed
      continue;
    }
    // Keep the old object when the policy is identical, so anything keyed on it stays valid.
    const compiled = old && sameAsOld ? old.compiled : fresh;
    policies.set(name, {
      name,
      file: claim.file,
      version: compiled.policy.version,
      hash: compiled.hash,
      status: "active",
      loadedAt: old && sameAsOld ? old.loadedAt : now,
      lastError: null,
      rejectedChanges: old?.rejectedChanges ?? 0,
      compiled,
    });
    const type = old ? "reloaded" : "loaded";
    events.push({ type, name, file: claim.file, version: compiled.policy.version, hash: compiled.hash });
  }

  const present = new Set(records.map((r) => r.file));
  for (const [name, old] of prev.policies) {
    if (policies.has(name)) continue;
    if (old.status === "retired") {
      policies.set(name, old);
      continue;
    }
    const why = present.has(old.file) ? `${old.file} no longer defines "${name}"` : `${old.file} was deleted`;
    const error = `${why}: policy "${name}" is retired (requests naming it are refused as unknown); tenants whose default it is keep its last version (${old.version}) until a policy file defines "${name}" again`;
    policies.set(name, { ...old, status: "retired", lastError: error });
    events.push({ type: "retired", name, file: old.file, version: old.version, hash: old.hash, error });
  }

  const rejectedOut = new Map<string, RejectedFile>();
  for (const [file, r] of rejected) {
    const before = prev.rejected.get(file);
    if (before && before.error === r.error && !changed.has(file)) {
      rejectedOut.set(file, before);
      continue;
    }
    rejectedOut.set(file, { file, error: r.error, at: now });
    events.push({
      type: "rejected",
      file,
      error: r.error,
      ...(r.name === undefined ? {} : { name: r.name }),
    });
  }

  const files = new Map(records.map((r) => [r.file, r]));
  return { next: { files, policies, rejected: rejectedOut }, events };
}

/** The `file:line: version: …` problem of a changed policy whose version did not go up. */
function versionNotRaised(claim: Claim, version: number, serving: number): string {
  const problem = {
    file: claim.file,
    path: ["version"],
    message: `${version} is not above the serving version ${serving}: a changed policy must raise its version (version ${serving} keeps serving)`,
  };
  const [located] = addLines([problem], claim.text);
  return formatProblem(located ?? problem);
}
