/**
 * The shared contract every backend adapter must pass (STYLE.md: one suite, every implementation).
 * Each adapter's test file calls `runBackendContract` with a factory and a controllable fake upstream.
 */
import { type Backend, BackendError, type BackendErrorKind } from "../../src/backends/types";
import type { MemoryType, Role } from "../../src/pipeline/types";
import { MEMORY_TYPES } from "../../src/pipeline/types";
import { policySchema } from "../../src/policy/schema";

export interface SeedMemory {
  id: string;
  content: string;
  type: MemoryType;
  timestamp: string;
  sessionId: string;
  role?: Role;
  /** A fact's validity (the fake Zep sends them as an edge's `valid_at`, `invalid_at`; others ignore them). */
  validAt?: string;
  invalidAt?: string;
}

/** Faults an upstream can be told to produce on its next call(s). */
export type Fault = "server_error" | "rate_limited" | "slow" | "network" | "bad_request";

export interface ContractUpstream {
  /** Store these memories for the user (the fake answers searches with them). */
  seed(userId: string, memories: SeedMemory[]): Promise<void>;
  /** Make every following call fail this way until `reset`. */
  fail(fault: Fault): void;
  reset(): Promise<void>;
  close(): Promise<void>;
}

export interface ContractOptions {
  name: string;
  makeUpstream(): Promise<ContractUpstream>;
  makeBackend(upstream: ContractUpstream): Promise<Backend>;
  /** Faults this backend's upstream can produce (a local store cannot answer 429). */
  faults: readonly Fault[];
  /** Whether an unknown user is reported by userExists (false for backends with no user registry). */
  hasUserRegistry: boolean;
  /** The timeout the contract uses with the `slow` fault; the fake must answer slower than this. */
  timeoutMs?: number;
}

export const CONTRACT_USER = "ana.lopez";
export const CONTRACT_QUERY = "coffee order";

export const CONTRACT_MEMORIES: SeedMemory[] = [
  {
    id: "m1",
    content: "Ana usually orders an oat milk flat white coffee.",
    type: "fact",
    timestamp: "2026-03-01T09:00:00.000Z",
    sessionId: "s-1",
  },
  {
    id: "m2",
    content: "I'd like my usual coffee order, but make it decaf today.",
    type: "message",
    timestamp: "2026-03-02T08:30:00.000Z",
    sessionId: "s-2",
    role: "user",
  },
  {
    id: "m3",
    content: "Ana discussed coffee preferences and her morning order routine.",
    type: "summary",
    timestamp: "2026-03-03T07:45:00.000Z",
    sessionId: "s-3",
  },
];

const expectedKind: Record<Fault, BackendErrorKind> = {
  server_error: "unavailable",
  slow: "unavailable",
  network: "unavailable",
  rate_limited: "rate_limited",
  bad_request: "invalid_query",
};

export function runBackendContract(opts: ContractOptions): void {
  const policy = policySchema.parse({ name: "contract", version: 1 });
  const timeoutMs = opts.timeoutMs ?? 300;
  // Calls that must succeed get a deadline no loaded machine reaches (a 300 ms one timed out once in CI); only the
  // fault tests use `timeoutMs`, which the `slow` fault must outlast.
  const answerMs = 10_000;

  describe(`backend contract: ${opts.name}`, () => {
    let upstream: ContractUpstream;
    let backend: Backend;

    beforeEach(async () => {
      upstream = await opts.makeUpstream();
      await upstream.seed(CONTRACT_USER, CONTRACT_MEMORIES);
      backend = await opts.makeBackend(upstream);
    });

    afterEach(async () => {
      await backend.close?.();
      await upstream.close();
    });

    const search = (limit = 16, userId = CONTRACT_USER, deadlineMs = answerMs) =>
      backend.search({
        userId,
        query: CONTRACT_QUERY,
        limit,
        searchType: "hybrid",
        policy,
        signal: AbortSignal.timeout(deadlineMs),
      });

    test("search returns well-formed candidates with scores normalized to [0,1]", async () => {
      const results = await search();
      expect(results.length).toBeGreaterThan(0);
      const seededIds = new Set(CONTRACT_MEMORIES.map((m) => m.id));
      for (const c of results) {
        expect(typeof c.id).toBe("string");
        expect(c.id.length).toBeGreaterThan(0);
        expect(seededIds.has(c.sourceId ?? c.id)).toBe(true);
        expect(c.score).toBeGreaterThanOrEqual(0);
        expect(c.score).toBeLessThanOrEqual(1);
        expect(Number.isNaN(Date.parse(c.timestamp))).toBe(false);
        expect(MEMORY_TYPES).toContain(c.type);
        expect(typeof c.content).toBe("string");
        expect(c.content.length).toBeGreaterThan(0);
        expect(c.backend).toBe(backend.name);
      }
    });

    test("search keeps the backend's ranking: scores never increase down the list", async () => {
      const results = await search();
      for (let i = 1; i < results.length; i++) {
        const prev = results[i - 1];
        const cur = results[i];
        if (prev === undefined || cur === undefined) throw new Error("unreachable");
        expect(cur.score).toBeLessThanOrEqual(prev.score);
      }
    });

    test("search returns at most `limit` candidates", async () => {
      const results = await search(2);
      expect(results.length).toBeLessThanOrEqual(2);
      expect(results.length).toBeGreaterThan(0);
    });

    test("search for a user with no memories returns no candidates (or reports not_found)", async () => {
      try {
        const results = await search(16, "nobody-here");
        expect(results).toEqual([]);
      } catch (err) {
        expect(err).toBeInstanceOf(BackendError);
        expect((err as BackendError).kind).toBe("not_found");
      }
    });

    test("userExists is true for a seeded user", async () => {
      await expect(
        backend.userExists(CONTRACT_USER, { signal: AbortSignal.timeout(answerMs) }),
      ).resolves.toBe(true);
    });

    if (opts.hasUserRegistry) {
      test("userExists is false for an unknown user", async () => {
        await expect(
          backend.userExists("nobody-here", { signal: AbortSignal.timeout(answerMs) }),
        ).resolves.toBe(false);
      });
    }

    // Progressive disclosure (docs/api.md#progressive-disclosure): reads by id, scoped to the user.
    const OTHER: SeedMemory = {
      id: "other-1",
      content: "Someone else's coffee order.",
      type: "message",
      timestamp: "2026-03-02T08:31:00.000Z",
      sessionId: "s-2",
      role: "user",
    };

    test("getMemories: the user's memories among the ids, in the order asked; others' and unknown ids absent", async () => {
      await upstream.seed("bob.other", [OTHER]);
      if (backend.getMemories === undefined) throw new Error(`${opts.name} has no getMemories`);
      const found = await backend.getMemories({
        userId: CONTRACT_USER,
        ids: ["m2", OTHER.id, "no-such-id", "m1"],
        signal: AbortSignal.timeout(answerMs),
      });
      expect(found.map((c) => c.id)).toEqual(["m2", "m1"]);
      for (const c of found) {
        const seeded = CONTRACT_MEMORIES.find((m) => m.id === c.id);
        expect(c.content).toBe(seeded?.content);
        expect(c.backend).toBe(backend.name);
      }
    });

    test("neighbours: the memory and the user's turns around it; another user's or an unknown id is undefined", async () => {
      await upstream.seed("bob.other", [OTHER]);
      if (backend.neighbours === undefined) throw new Error(`${opts.name} has no neighbours`);
      const around = (id: string) =>
        backend.neighbours?.({
          userId: CONTRACT_USER,
          id,
          before: 3,
          after: 3,
          signal: AbortSignal.timeout(answerMs),
        });
      const found = await around("m2");
      expect(found?.anchor.id).toBe("m2");
      const own = new Set(CONTRACT_MEMORIES.map((m) => m.id));
      const anchorTime = Date.parse(found?.anchor.timestamp ?? "");
      for (const c of found?.before ?? []) {
        expect(own.has(c.id)).toBe(true);
        expect(Date.parse(c.timestamp)).toBeLessThanOrEqual(anchorTime);
      }
      for (const c of found?.after ?? []) {
        expect(own.has(c.id)).toBe(true);
        expect(Date.parse(c.timestamp)).toBeGreaterThanOrEqual(anchorTime);
      }
      expect(await around(OTHER.id)).toBeUndefined();
      expect(await around("no-such-id")).toBeUndefined();
    });

    test("ping succeeds when the upstream is up", async () => {
      await expect(backend.ping({ signal: AbortSignal.timeout(answerMs) })).resolves.toBeUndefined();
    });

    for (const fault of opts.faults) {
      test(`a ${fault} upstream fault becomes BackendError(${expectedKind[fault]})`, async () => {
        upstream.fail(fault);
        const started = Date.now();
        const err = await search(16, CONTRACT_USER, timeoutMs).then(
          () => null,
          (e: unknown) => e,
        );
        expect(err).toBeInstanceOf(BackendError);
        const be = err as BackendError;
        expect(be.kind).toBe(expectedKind[fault]);
        expect(be.backend).toBe(backend.name);
        expect(be.retryable).toBe(be.kind === "unavailable");
        // No secret, query or memory content leaks into the message.
        expect(be.message).not.toContain(CONTRACT_QUERY);
        expect(be.message).not.toContain("coffee");
        if (fault === "rate_limited") expect(be.retryAfterMs).toBeGreaterThan(0);
        // The adapter gives up at the caller's deadline, it does not retry behind its back.
        expect(Date.now() - started).toBeLessThan(timeoutMs + 1000);
      });
    }
  });
}
