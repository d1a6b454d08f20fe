import type { CompiledPolicy } from "./compile";

export type PolicyState = "active" | "retired";

/** What `GET /v1/policies` shows for one policy. */
export interface PolicyStatus {
  name: string;
  file: string;
  version: number;
  hash: string;
  /**
   * active: serving from its file. retired: its file was deleted (or now defines another name): a request naming
   * it is answered as for an unknown policy; only a tenant whose default it is keeps its last version.
   */
  status: PolicyState;
  loadedAt: string;
  /** The last rejected change of this policy's file, if any (the previous version kept serving). */
  lastError: string | null;
  rejectedChanges: number;
}

/** A rejected file that defines no serving policy (e.g. a new file that never validated). */
export interface RejectedFile {
  file: string;
  error: string;
  at: string;
}

export interface PolicyRegistry {
  /** The active policy of that name; undefined when unknown or retired. */
  get(name: string): CompiledPolicy | undefined;
  /**
   * The last version of a retired policy (its file was deleted), for tenants whose default it still is; undefined
   * when the name is active or was never loaded.
   */
  retired(name: string): CompiledPolicy | undefined;
  list(): { policies: PolicyStatus[]; rejected: RejectedFile[] };
  /** Re-reads the directory now (the watcher calls this; tests may too). */
  reload(): Promise<void>;
  close(): void;
}
