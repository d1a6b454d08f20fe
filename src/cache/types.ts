import type { RetrievalPayload } from "../retrieval/payload";
import type { PayloadText } from "../retrieval/payload-text";
import type { FlightUnlock } from "./singleflight";

/** A shaped, post-redaction payload as cached (never raw backend content; never an explain trace). */
export type CachedPayload = Omit<RetrievalPayload, "trace">;

export interface CacheLookup {
  /** The payload (Redis: parsed from the stored text when first read). */
  readonly payload: CachedPayload;
  /**
   * The payload's JSON text: as stored (Redis), or made from the payload on first read and kept with the entry
   * (in process). What a hit on /v1/retrieve answers from, without serializing or parsing the payload.
   */
  readonly text?: PayloadText;
  /** Younger than the policy's ttlSeconds. Older entries are stale: served only by the `cache` fallback. */
  fresh: boolean;
  storedAt: number;
}

/** The payload cache (the `cache` fallback, docs/api.md#eligibility-and-fallbacks; seed 000's 60 s TTL). Failures never throw: they miss. */
export interface PayloadCache {
  readonly kind: "memory" | "redis";
  get(key: string): Promise<CacheLookup | undefined>;
  /**
   * Kept for ttlSeconds + staleSeconds in total; fresh for ttlSeconds. With `generation` (what `generation(key)`
   * said before the payload was produced), not written when the user's cache was invalidated since: an answer
   * produced before a deletion is never stored after it. `text`: the payload's JSON text when the caller already
   * made it (the answer of the miss that produced it): stored as it is, not serialized again. `unlock`: the entry's
   * single-flight lock, released with the write where the store can (Redis: the same script); resolves `true`
   * then, whether or not the entry was written (else the caller releases it).
   */
  set(
    key: string,
    payload: CachedPayload,
    ttlSeconds: number,
    staleSeconds: number,
    generation?: number,
    text?: PayloadText,
    unlock?: FlightUnlock,
  ): Promise<boolean>;
  /**
   * The generation of the user whose entry `key` is (0 before any invalidation, or for a key of no user);
   * undefined when it cannot be read (Redis down): then nothing is written for that user.
   */
  generation(key: string): Promise<number | undefined>;
  /**
   * Ends every cached answer (fresh and stale) of the tenant's user: called after a write or delete through the
   * gateway. With Redis, on every replica. Never throws (a failure is logged).
   */
  invalidateUser(tenantId: string, userId: string): Promise<void>;
  /**
   * False while the store cannot be reached (Redis down): lookups miss at once and payloads report
   * `metadata.cache: "bypass"`. Absent = always available.
   */
  available?(): boolean;
  close?(): Promise<void>;
}
