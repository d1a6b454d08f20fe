import { performance } from "node:perf_hooks";

/** What the driver saw, request by request. */
export interface LoadStats {
  sent: number;
  answered: number;
  /** No HTTP answer at all (connection error or the client's 10 s timeout), by reason. */
  unanswered: Map<string, number>;
  statuses: Map<number, number>;
  /** 200 answers by `metadata.fallback.code` ("none" for a normal retrieval). */
  fallbacks: Map<string, number>;
  /** 200 answers by `metadata.cache`. */
  cache: Map<string, number>;
  /** Client-side latency of every answered request, ms. */
  latencies: number[];
}

function bump<K>(m: Map<K, number>, k: K): void {
  m.set(k, (m.get(k) ?? 0) + 1);
}

const CLIENT_TIMEOUT_MS = 10_000;

/**
 * An open-loop load at a fixed rate: requests are sent on schedule whether or not earlier ones were answered
 * (a closed loop would slow down with the gateway and hide its stalls). Loopback only.
 */
export class FixedRateLoad {
  readonly stats: LoadStats = {
    sent: 0,
    answered: 0,
    unanswered: new Map(),
    statuses: new Map(),
    fallbacks: new Map(),
    cache: new Map(),
    latencies: [],
  };
  private timer: NodeJS.Timeout | undefined;
  private readonly inFlight = new Set<Promise<void>>();
  private started = 0;

  constructor(
    private readonly url: string,
    private readonly rate: number,
    private readonly body: (i: number) => object,
  ) {}

  start(): void {
    this.started = performance.now();
    this.timer = setInterval(() => this.tick(), 5);
  }

  /** Stops sending and waits for every request in flight. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await Promise.all([...this.inFlight]);
  }

  private tick(): void {
    const due = Math.floor((this.rate * (performance.now() - this.started)) / 1000);
    while (this.stats.sent < due) {
      const p = this.send(this.stats.sent++);
      this.inFlight.add(p);
      p.finally(() => this.inFlight.delete(p));
    }
  }

  private async send(i: number): Promise<void> {
    const t0 = performance.now();
    let res: Response;
    try {
      res = await fetch(`${this.url}/v1/retrieve`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-api-key": "mg_soak_driver_key" },
        body: JSON.stringify(this.body(i)),
        signal: AbortSignal.timeout(CLIENT_TIMEOUT_MS),
      });
    } catch (err) {
      const cause =
        err instanceof Error ? ((err.cause as { code?: string } | undefined)?.code ?? err.name) : "error";
      bump(this.stats.unanswered, cause);
      return;
    }
    let payload: { metadata?: { fallback?: { code?: string } | null; cache?: string } } = {};
    try {
      payload = (await res.json()) as typeof payload;
    } catch {
      // a non-JSON answer still counts by its status
    }
    this.stats.latencies.push(performance.now() - t0);
    this.stats.answered++;
    bump(this.stats.statuses, res.status);
    if (res.status === 200) {
      bump(this.stats.fallbacks, payload.metadata?.fallback?.code ?? "none");
      bump(this.stats.cache, payload.metadata?.cache ?? "?");
    }
  }
}
