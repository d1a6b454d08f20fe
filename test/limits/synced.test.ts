import fc from "fast-check";
import { type CounterState, type SharedCounters, SyncedRateLimiter } from "../../src/limits/synced";
import type { RateDecision, RateRule } from "../../src/limits/types";

/**
 * The local per-key count (src/limits/synced.ts) against an in-memory shared counter with Redis's window arithmetic
 * (SET NX EX, INCRBY, PTTL) on a clock the test moves: a simulated fleet of replicas, each with its own timer.
 */
class FakeCounters implements SharedCounters {
  readonly counters = new Map<string, { count: number; endsAt: number }>();
  reports = 0;
  insured = 0;
  up = true;

  constructor(private readonly clock: { now: number }) {}

  ready(): boolean {
    return this.up;
  }

  async report(key: string, rule: RateRule, points: number): Promise<CounterState> {
    this.reports += 1;
    if (!this.up) throw new Error("down");
    let c = this.counters.get(key);
    if (c === undefined || c.endsAt <= this.clock.now) {
      c = { count: 0, endsAt: this.clock.now + rule.durationSeconds * 1000 };
      this.counters.set(key, c);
    }
    c.count += points;
    return { count: c.count, ttlMs: c.endsAt - this.clock.now };
  }

  async insurance(_key: string, rule: RateRule): Promise<RateDecision> {
    this.insured += 1;
    return { allowed: true, retryAfterMs: 0, remaining: rule.points, resetMs: rule.durationSeconds * 1000 };
  }
}

/** Replicas sharing one FakeCounters; each runs its `flush` every `syncMs` of the shared clock, as its timer would. */
class Fleet {
  readonly clock = { now: 1_000_000 };
  readonly counters = new FakeCounters(this.clock);
  readonly replicas: Array<{ limiter: SyncedRateLimiter; nextTick: number; requests: number[] }> = [];

  constructor(
    size: number,
    readonly syncMs: number,
  ) {
    for (let i = 0; i < size; i++)
      this.replicas.push({
        limiter: new SyncedRateLimiter(this.counters, syncMs, () => this.clock.now, false),
        // Timers of different replicas are not aligned.
        nextTick: this.clock.now + Math.floor(((i + 1) * syncMs) / (size + 1)),
        requests: [],
      });
  }

  /** Moves the clock, running every timer due on the way, in time order. */
  async advance(ms: number): Promise<void> {
    const end = this.clock.now + ms;
    for (;;) {
      const due = this.replicas.filter((r) => r.nextTick <= end).sort((a, b) => a.nextTick - b.nextTick)[0];
      if (due === undefined) break;
      this.clock.now = Math.max(this.clock.now, due.nextTick);
      due.nextTick += this.syncMs;
      await due.limiter.flush();
    }
    this.clock.now = end;
  }

  async request(replica: number, rule: RateRule): Promise<RateDecision> {
    const r = this.replicas[replica];
    if (r === undefined) throw new Error(`no replica ${replica}`);
    r.requests.push(this.clock.now);
    return r.limiter.consume("acme:chat", rule);
  }
}

const HOUR: RateRule = { points: 20, durationSeconds: 3600 };

describe("SyncedRateLimiter: the per-key limit counted locally, reported in batches", () => {
  test("one replica is exact: `points` admitted, then 429s with the window's end, the headers' figures", async () => {
    const fleet = new Fleet(1, 250);
    const rule: RateRule = { points: 5, durationSeconds: 60 };
    const decisions: RateDecision[] = [];
    for (let i = 0; i < 8; i++) {
      decisions.push(await fleet.request(0, rule));
      await fleet.advance(40);
    }
    expect(decisions.map((d) => d.allowed)).toEqual([true, true, true, true, true, false, false, false]);
    expect(decisions.slice(0, 5).map((d) => d.remaining)).toEqual([4, 3, 2, 1, 0]);
    // resetMs counts down from the window the first request opened; a refusal waits for its end.
    expect(decisions[0]?.resetMs).toBe(60_000);
    expect(decisions[5]).toEqual({
      allowed: false,
      retryAfterMs: 60_000 - 200,
      remaining: 0,
      resetMs: 60_000 - 200,
    });
    // What was admitted reached the shared counter (reported by the timer), the refusals did not.
    await fleet.advance(300);
    expect(fleet.counters.counters.get("acme:chat")?.count).toBe(5);
  });

  test("cheap: a burst within one interval costs one report, refusals none, then one report per interval", async () => {
    const fleet = new Fleet(1, 250);
    const rule: RateRule = { points: 1000, durationSeconds: 60 };
    for (let i = 0; i < 500; i++) expect((await fleet.request(0, rule)).allowed).toBe(true);
    expect(fleet.counters.reports).toBe(1); // the first request's read of the counter
    await fleet.advance(250);
    expect(fleet.counters.reports).toBe(2); // the timer's batch of 500
    for (let i = 0; i < 1000; i++) await fleet.request(0, rule);
    await fleet.advance(250);
    expect(fleet.counters.reports).toBe(3);
    expect(fleet.counters.counters.get("acme:chat")?.count).toBe(1000);
    // Saturated: refusals are decided locally, whatever the age of the view, and nothing is reported.
    await fleet.advance(5000);
    const before = fleet.counters.reports;
    for (let i = 0; i < 200; i++) expect((await fleet.request(0, rule)).allowed).toBe(false);
    expect(fleet.counters.reports).toBe(before);
  });

  test("a stale view that would admit reads the shared count first: another replica's admissions count", async () => {
    const fleet = new Fleet(2, 250);
    const rule: RateRule = { points: 10, durationSeconds: 60 };
    for (let i = 0; i < 10; i++) expect((await fleet.request(0, rule)).allowed).toBe(true);
    await fleet.advance(600); // replica 0 reported its 10
    // Replica 1 never saw this key: its first request reads the counter, and is refused.
    expect((await fleet.request(1, rule)).allowed).toBe(false);
  });

  test("a known key's view older than the interval is read again before it admits", async () => {
    const fleet = new Fleet(2, 250);
    const rule: RateRule = { points: 10, durationSeconds: 60 };
    for (let i = 0; i < 2; i++) expect((await fleet.request(1, rule)).allowed).toBe(true);
    await fleet.advance(300); // replica 1 reported its 2 and read 2
    for (let i = 0; i < 8; i++) expect((await fleet.request(0, rule)).allowed).toBe(true);
    await fleet.advance(600); // replica 0 reported its 8; replica 1's view (2) is stale
    const reports = fleet.counters.reports;
    expect((await fleet.request(1, rule)).allowed).toBe(false);
    expect(fleet.counters.reports).toBe(reports + 1);
  });

  test("the rule is read per request (a tenants-file reload): a raised limit admits at once in the same window", async () => {
    const fleet = new Fleet(1, 250);
    for (let i = 0; i < 3; i++) await fleet.request(0, { points: 3, durationSeconds: 60 });
    expect((await fleet.request(0, { points: 3, durationSeconds: 60 })).allowed).toBe(false);
    const raised = await fleet.request(0, { points: 5, durationSeconds: 60 });
    expect(raised).toMatchObject({ allowed: true, remaining: 1 });
    expect((await fleet.request(0, { points: 2, durationSeconds: 60 })).allowed).toBe(false);
  });

  test("a new window starts a new count; the old window's unreported points are not carried into it", async () => {
    const fleet = new Fleet(1, 250);
    const rule: RateRule = { points: 3, durationSeconds: 1 };
    for (let i = 0; i < 3; i++) await fleet.request(0, rule);
    expect((await fleet.request(0, rule)).allowed).toBe(false);
    await fleet.advance(1000);
    const next = await fleet.request(0, rule);
    expect(next).toMatchObject({ allowed: true, remaining: 2 });
    await fleet.advance(300);
    expect(fleet.counters.counters.get("acme:chat")?.count).toBe(1);
  });

  test("the store unusable: the insurance answers; a failed report's points are sent with the next one", async () => {
    const fleet = new Fleet(1, 250);
    const rule: RateRule = { points: 100, durationSeconds: 60 };
    for (let i = 0; i < 4; i++) await fleet.request(0, rule);
    fleet.counters.up = false;
    await fleet.request(0, rule);
    expect(fleet.counters.insured).toBe(1);
    await fleet.advance(250); // the timer skips an unusable store
    fleet.counters.up = true;
    await fleet.advance(250);
    expect(fleet.counters.counters.get("acme:chat")?.count).toBe(4);
    // A report that fails (the store said ready but the call failed): this request goes to the insurance, the
    // pending points stay and are sent with the next report.
    await fleet.request(0, rule);
    await fleet.advance(2000); // idle: the view is stale
    const failing = fleet.counters;
    const report = failing.report.bind(failing);
    failing.report = async () => {
      throw new Error("boom");
    };
    await fleet.request(0, rule);
    expect(failing.insured).toBe(2);
    failing.report = report;
    expect((await fleet.request(0, rule)).allowed).toBe(true);
    expect(fleet.counters.counters.get("acme:chat")?.count).toBe(5);
  });

  test("property: a fleet admits at least min(points, requests), and beyond `points` only within 2 intervals", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 4 }),
        fc.integer({ min: 1, max: 100 }),
        fc.array(
          fc.record({
            replica: fc.nat(3),
            // Mostly bursts, sometimes a pause of several intervals (a replica's view goes stale).
            gapMs: fc.oneof(
              { weight: 4, arbitrary: fc.integer({ min: 0, max: 20 }) },
              { weight: 1, arbitrary: fc.integer({ min: 0, max: 600 }) },
            ),
          }),
          { minLength: 1, maxLength: 120, size: "max" },
        ),
        async (size, syncMs, events) => {
          const fleet = new Fleet(size, syncMs);
          const log: Array<{ at: number; allowed: boolean }> = [];
          for (const e of events) {
            await fleet.advance(e.gapMs);
            const { allowed } = await fleet.request(e.replica % size, HOUR);
            log.push({ at: fleet.clock.now, allowed });
          }
          const admitted = log.filter((e) => e.allowed).length;
          expect(admitted).toBeGreaterThanOrEqual(Math.min(HOUR.points, events.length));
          if (size === 1) expect(admitted).toBe(Math.min(HOUR.points, events.length));
          // The bound of src/limits/synced.ts (reports answer at once here, d = 0): once `points` are admitted (at
          // t*), only the requests of the next 2T may still be — none after.
          let seen = 0;
          const full = log.findIndex((e) => e.allowed && ++seen === HOUR.points);
          if (full >= 0) {
            const tStar = log[full]?.at ?? 0;
            const late = log.slice(full + 1).filter((e) => e.allowed);
            expect(late.every((e) => e.at <= tStar + 2 * syncMs)).toBe(true);
            expect(late.length).toBeLessThanOrEqual((size - 1) * HOUR.points);
          }
          expect(fleet.counters.insured).toBe(0);
        },
      ),
      { numRuns: 300 },
    );
  });

  test("syncMs must be > 0 (0 is the exact limiter)", () => {
    expect(() => new SyncedRateLimiter(new FakeCounters({ now: 0 }), 0)).toThrow(/syncMs must be > 0/);
  });
});
