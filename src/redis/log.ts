import type { Logger } from "../logging/logger";

/**
 * Redis faults come in bursts (every request fails the same way while Redis is down): one warn line per kind of
 * failure per interval, with the number of repeats it stood for. Only the error's name and message are logged,
 * never the error object: an ioredis ReplyError carries the command and its arguments (keys).
 */
export class ThrottledLog {
  private readonly last = new Map<string, { at: number; suppressed: number }>();

  constructor(
    private readonly logger: Logger,
    private readonly intervalMs = 10_000,
    private readonly now: () => number = Date.now,
  ) {}

  warn(what: string, err: unknown): void {
    const t = this.now();
    const seen = this.last.get(what);
    if (seen !== undefined && t - seen.at < this.intervalMs) {
      seen.suppressed++;
      return;
    }
    this.last.set(what, { at: t, suppressed: 0 });
    this.logger.warn(
      { redis: what, error: describe(err), repeated: seen?.suppressed ?? 0 },
      "redis operation failed; degrading",
    );
  }
}

/** `name: message` of an error, without any attached command or arguments. */
export function describe(err: unknown): string {
  if (err instanceof Error) return `${err.name}: ${err.message}`.slice(0, 200);
  return typeof err === "string" ? err.slice(0, 200) : "unknown error";
}
