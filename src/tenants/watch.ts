/**
 * The tenants file, hot-reloaded like the policy directory (docs/configuration.md#reloading-the-tenants-file): keys,
 * scopes, limits, policies and backends change without a restart. A change that does not validate (or that the
 * server's own check refuses, e.g. a default policy that is not loaded) is refused: the previous file keeps
 * serving, the error is logged and kept in `status().lastError` (shown by /readyz as degraded).
 */
import { createHash } from "node:crypto";
import { basename, dirname } from "node:path";
import type { Logger } from "../logging/logger";
import { type DirWatcher, serialized, watchDirectory } from "../policy/watch";
import { readTenantsText, TenantsFileError, tenantsFromText } from "./file";
import type { Principal, Tenant, TenantDirectory } from "./types";

export interface TenantsFileStatus {
  file: string;
  /** When the serving file was loaded (ISO 8601). */
  loadedAt: string;
  /** The last refused change, one `file:line: path: message` line per problem; null once a change is accepted. */
  lastError: string | null;
  rejectedChanges: number;
}

export type TenantsReloadOutcome = "reloaded" | "rejected";

/** A tenants directory that follows its file. */
export interface ReloadingTenants extends TenantDirectory {
  status(): TenantsFileStatus;
  /** Reads the file again now (the watcher calls this; tests may too). */
  reload(): Promise<void>;
  close(): void;
}

export interface TenantsWatchOptions {
  file: string;
  env: NodeJS.ProcessEnv;
  logger: Logger;
  /** Watch the file's directory and reload on change (default false). */
  watch?: boolean;
  /** Quiet time after the last file-system event before reloading (default 100 ms). */
  debounceMs?: number;
  /**
   * The server's own rules for a changed file (e.g. every default policy is loaded): problems, one line each.
   * The boot applies the same rules itself (src/server/services.ts).
   */
  checkChange?: (directory: TenantDirectory, file: string) => string[];
  onReload?: (outcome: TenantsReloadOutcome) => void;
}

const sha256 = (text: string): string => createHash("sha256").update(text).digest("hex");

/** A file that cannot be read, with the reason (`cannot read the file (ENOENT)`), as the loader says it. */
async function readText(file: string): Promise<{ text: string } | { error: TenantsFileError }> {
  try {
    return { text: await readTenantsText(file) };
  } catch (err) {
    if (err instanceof TenantsFileError) return { error: err };
    throw err;
  }
}

/**
 * Loads the tenants file and, with `watch`, keeps it current. Throws (the loader's TenantsFileError, or an Error
 * with `check`'s lines) when the file is invalid at start: the boot check.
 */
export async function loadReloadingTenants(opts: TenantsWatchOptions): Promise<ReloadingTenants> {
  const { file, env, logger } = opts;
  const first = await readText(file);
  if ("error" in first) throw first.error;
  let current: TenantDirectory = tenantsFromText(first.text, file, env);
  let contentHash = sha256(first.text);
  let status: TenantsFileStatus = {
    file,
    loadedAt: new Date().toISOString(),
    lastError: null,
    rejectedChanges: 0,
  };

  const refuse = (error: string, hash: string): void => {
    contentHash = hash; // the same bad bytes again are no news
    status = { ...status, lastError: error, rejectedChanges: status.rejectedChanges + 1 };
    logger.error(
      { event: "tenants.rejected", file, error },
      "tenants file change rejected; the previous file keeps serving",
    );
    opts.onReload?.("rejected");
  };

  const runReload = async (): Promise<void> => {
    const read = await readText(file);
    const hash = "error" in read ? `unreadable:${read.error.message}` : sha256(read.text);
    if (hash === contentHash) return;
    if ("error" in read) return refuse(read.error.message, hash);
    let next: TenantDirectory;
    try {
      next = tenantsFromText(read.text, file, env);
    } catch (err) {
      return refuse(err instanceof Error ? err.message : String(err), hash);
    }
    const problems = opts.checkChange?.(next, file) ?? [];
    if (problems.length > 0) return refuse(problems.join("\n"), hash);
    current = next;
    contentHash = hash;
    status = {
      file,
      loadedAt: new Date().toISOString(),
      lastError: null,
      rejectedChanges: status.rejectedChanges,
    };
    const tenants = next.tenants();
    logger.info({ event: "tenants.reloaded", file, tenants: tenants.length }, "tenants file reloaded");
    opts.onReload?.("reloaded");
  };

  const reload = serialized(runReload);

  let watcher: DirWatcher | undefined;
  if (opts.watch) {
    const name = basename(file);
    watcher = watchDirectory(dirname(file), {
      debounceMs: opts.debounceMs ?? 100,
      onChange: () => {
        reload().catch((err: unknown) =>
          logger.error({ err, file: name }, "tenants reload failed; the previous file keeps serving"),
        );
      },
      onError: (err) => logger.error({ err, file }, "tenants file watcher failed"),
    });
  }

  return {
    devMode: false,
    authenticate: (key: string | undefined): Principal | null => current.authenticate(key),
    tenants: (): readonly Tenant[] => current.tenants(),
    status: () => status,
    reload,
    close: () => {
      watcher?.close();
      watcher = undefined;
    },
  };
}
