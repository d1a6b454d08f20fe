import type { CompiledPolicy } from "./compile";

export type PolicyState = "active" | "orphaned";

/** What `GET /v1/policies` shows for one policy. */
export interface PolicyStatus {
  name: string;
  file: string;
  version: number;
  hash: string;
  /** active: serving from its file; orphaned: its file was deleted, the last version keeps serving. */
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
  get(name: string): CompiledPolicy | undefined;
  list(): { policies: PolicyStatus[]; rejected: RejectedFile[] };
  /** Re-reads the directory now (the watcher calls this; tests may too). */
  reload(): Promise<void>;
  close(): void;
}
