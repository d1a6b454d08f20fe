import { compareIds } from "./order";

/**
 * Each distinct id of a list of items as a slot: the position of its last item, as a Map by id keeps the last of a
 * repeated id. Looked up by binary search over the positions sorted by id (then position). A stage that kept a Map
 * by id of its 40 or so memories paid ~3 KB a request for the Map's tables as it grew; this is one typed array.
 * The list must not change while the slots are in use.
 */
export class IdSlots {
  /** Positions sorted by (id, position). */
  private readonly sorted: Int32Array;
  /** Each position's slot: the last position with the same id. */
  readonly slotOf: Int32Array;

  constructor(private readonly items: ReadonlyArray<{ readonly id: string }>) {
    const n = items.length;
    const sorted = new Int32Array(n);
    for (let p = 0; p < n; p++) sorted[p] = p;
    sorted.sort((a, b) => compareIds(this.idAt(a), this.idAt(b)) || a - b);
    const slotOf = new Int32Array(n);
    // Runs of one id in `sorted`: every member's slot is the run's last (largest) position.
    let start = 0;
    for (let x = 1; x <= n; x++) {
      if (x < n && this.idAt(sorted[x] as number) === this.idAt(sorted[start] as number)) continue;
      const last = sorted[x - 1] as number;
      for (let y = start; y < x; y++) slotOf[sorted[y] as number] = last;
      start = x;
    }
    this.sorted = sorted;
    this.slotOf = slotOf;
  }

  private idAt(p: number): string {
    return (this.items[p] as { id: string }).id;
  }

  /** The slot of `id` (its last position), or −1 when no item has it. */
  slot(id: string): number {
    const sorted = this.sorted;
    // The first entry whose id sorts after `id`; the one before it is the last with `id`, if any.
    let lo = 0;
    let hi = sorted.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.idAt(sorted[mid] as number) <= id) lo = mid + 1;
      else hi = mid;
    }
    if (lo === 0) return -1;
    const p = sorted[lo - 1] as number;
    return this.idAt(p) === id ? p : -1;
  }
}

/** What a stage reads of a number per id: a `Map<string, number>` or an `IdValues`. */
export interface ValuesById {
  get(id: string): number | undefined;
}

/**
 * A number per distinct id of a list of items (`IdSlots`), written and read like a `Map<string, number>` by id
 * (the last value set for an id is the one read) but held in a typed array by slot. Every id starts unset.
 */
export class IdValues implements ValuesById {
  readonly values: Float64Array;
  private readonly present: Uint8Array;

  constructor(readonly slots: IdSlots) {
    this.values = new Float64Array(slots.slotOf.length);
    this.present = new Uint8Array(slots.slotOf.length);
  }

  /** Sets the value of the id of the item at `position`. */
  setAt(position: number, value: number): void {
    const slot = this.slots.slotOf[position] as number;
    this.values[slot] = value;
    this.present[slot] = 1;
  }

  get(id: string): number | undefined {
    const slot = this.slots.slot(id);
    return slot < 0 || this.present[slot] === 0 ? undefined : this.values[slot];
  }
}
