/**
 * A hit ratio over a sliding time window, in fixed slots (default: 30 slots of 10 s = the last 5 minutes).
 *
 * Why a gauge besides the `retrieval.cache.lookups` counter: seed 000 names `retrieval.cache_hit_rate`, and OTLP
 * consumers without a query language (or an on-call glance at `/metrics`) get the number directly. It is per
 * process and cannot be averaged across replicas meaningfully; fleet-wide rates come from the counter
 * (`sum(rate(..{cache="hit"}[5m])) / sum(rate(..{cache!="bypass"}[5m]))`).
 */
export class SlidingHitRate {
  private readonly hits: number[];
  private readonly totals: number[];
  private readonly epochs: number[];

  constructor(
    private readonly slotMs = 10_000,
    private readonly slots = 30,
    private readonly now: () => number = Date.now,
  ) {
    this.hits = new Array<number>(slots).fill(0);
    this.totals = new Array<number>(slots).fill(0);
    this.epochs = new Array<number>(slots).fill(-1);
  }

  record(hit: boolean): void {
    const epoch = Math.floor(this.now() / this.slotMs);
    const i = epoch % this.slots;
    if (this.epochs[i] !== epoch) {
      this.epochs[i] = epoch;
      this.hits[i] = 0;
      this.totals[i] = 0;
    }
    this.totals[i] = (this.totals[i] ?? 0) + 1;
    if (hit) this.hits[i] = (this.hits[i] ?? 0) + 1;
  }

  /** Hits / lookups over the window; undefined when there was no lookup (no data, rather than a fake 0). */
  ratio(): number | undefined {
    const oldest = Math.floor(this.now() / this.slotMs) - this.slots + 1;
    let hits = 0;
    let total = 0;
    for (let i = 0; i < this.slots; i++) {
      if ((this.epochs[i] ?? -1) < oldest) continue;
      hits += this.hits[i] ?? 0;
      total += this.totals[i] ?? 0;
    }
    return total === 0 ? undefined : hits / total;
  }
}
