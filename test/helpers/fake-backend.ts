import { type Backend, BackendError, type CallOptions, type SearchRequest } from "../../src/backends/types";
import type { Candidate } from "../../src/pipeline/types";
import type { BackendName } from "../../src/policy/schema";

export type Script =
  | { kind: "ok" }
  | { kind: "error"; error: BackendError }
  | { kind: "hang" }
  | { kind: "delay"; ms: number }
  | { kind: "throw"; error: unknown };

/** A backend whose answers a test scripts, and which counts its calls. */
export class FakeBackend implements Backend {
  searchCalls = 0;
  existsCalls = 0;
  lastRequest: SearchRequest | undefined;
  script: Script = { kind: "ok" };
  readonly users = new Map<string, Candidate[]>();

  constructor(readonly name: BackendName) {}

  setUser(userId: string, candidates: Candidate[]): this {
    this.users.set(userId, candidates);
    return this;
  }

  fail(kind: BackendError["kind"], extra: { status?: number; retryAfterMs?: number } = {}): this {
    this.script = {
      kind: "error",
      error: new BackendError({
        kind,
        backend: this.name,
        message: `${this.name} failed: ${kind}`,
        ...extra,
      }),
    };
    return this;
  }

  private async act(signal: AbortSignal): Promise<void> {
    const s = this.script;
    if (s.kind === "error") throw s.error;
    if (s.kind === "throw") throw s.error;
    if (s.kind === "hang") await new Promise(() => undefined);
    if (s.kind === "delay") {
      await new Promise<void>((resolve, reject) => {
        const t = setTimeout(resolve, s.ms);
        signal.addEventListener("abort", () => {
          clearTimeout(t);
          reject(new BackendError({ kind: "unavailable", backend: this.name, message: "timeout" }));
        });
      });
    }
  }

  async search(req: SearchRequest): Promise<Candidate[]> {
    this.searchCalls++;
    this.lastRequest = req;
    await this.act(req.signal);
    return (this.users.get(req.userId) ?? []).slice(0, req.limit).map((c) => ({ ...c, backend: this.name }));
  }

  async userExists(userId: string, opts: CallOptions): Promise<boolean> {
    this.existsCalls++;
    if (this.script.kind !== "delay") await this.act(opts.signal);
    return this.users.has(userId);
  }

  async ping(): Promise<void> {}
}
