import { type FSWatcher, watch } from "node:fs";
import { readdir } from "node:fs/promises";
import { extname } from "node:path";

const POLICY_EXTENSIONS = new Set([".yaml", ".yml", ".json"]);

/** `*.yaml`, `*.yml`, `*.json`; never dotfiles (`.#a.yaml`, `.a.yaml.swp`, `..data`) or backups (`a.yaml~`). */
export function isPolicyFileName(name: string): boolean {
  return !name.startsWith(".") && !name.endsWith("~") && POLICY_EXTENSIONS.has(extname(name).toLowerCase());
}

/** Plain code-unit order: the same on every machine and locale ("which file sorts first" for duplicates). */
export const byCodeUnits = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/**
 * The policy file names in `dir` (not recursive), sorted by `byCodeUnits`. Symlinks count (a Kubernetes
 * ConfigMap volume is made of them). Throws an error naming the directory when it cannot be read.
 */
export async function listPolicyFiles(dir: string): Promise<string[]> {
  let names: string[];
  try {
    const entries = await readdir(dir, { withFileTypes: true });
    names = entries
      .filter((e) => (e.isFile() || e.isSymbolicLink()) && isPolicyFileName(e.name))
      .map((e) => e.name);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? "unreadable";
    throw new Error(`policy directory "${dir}" cannot be read (${code})`, { cause: err });
  }
  return names.sort(byCodeUnits);
}

export interface DirWatcher {
  close(): void;
}

export interface WatchOptions {
  /** Quiet time after the last event before `onChange` fires: editors write a temp file, then rename. */
  debounceMs: number;
  onChange: () => void;
  onError: (err: Error) => void;
}

/**
 * Watches one directory (not recursive) and calls `onChange` once per burst of events.
 *
 * Every event counts, whatever the file name: a Kubernetes ConfigMap volume updates by swapping the hidden
 * `..data` symlink, so filtering events by policy-file name would miss real changes. Reloading is cheap
 * (unchanged files are skipped by content hash), so over-triggering costs little.
 */
export function watchDirectory(dir: string, opts: WatchOptions): DirWatcher {
  let timer: NodeJS.Timeout | undefined;
  let closed = false;

  const fire = (): void => {
    timer = undefined;
    if (!closed) opts.onChange();
  };

  const watcher: FSWatcher = watch(dir, { persistent: true }, () => {
    if (closed) return;
    if (timer !== undefined) clearTimeout(timer);
    timer = setTimeout(fire, opts.debounceMs);
  });
  watcher.on("error", (err: Error) => {
    if (!closed) opts.onError(err);
  });

  return {
    close(): void {
      if (closed) return;
      closed = true;
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
      watcher.close();
    },
  };
}

/**
 * `run`, serialized: one call at a time, and calls made while one waits to start share it (it reads the disk after
 * them). The policy registry's and the tenants file's reloads.
 */
export function serialized(run: () => Promise<void>): () => Promise<void> {
  let tail: Promise<void> = Promise.resolve();
  let queued: Promise<void> | undefined;
  return () => {
    if (queued) return queued;
    const next = tail
      .catch(() => undefined)
      .then(() => {
        queued = undefined;
        return run();
      });
    queued = next;
    tail = next;
    return next;
  };
}
