/**
 * The log's stdout, written in batches (issue 29): the lines logged in one turn of the event loop are one `write`
 * instead of one each. A busy gateway writes one access line per request (and ends many requests per turn), and a
 * write to a pipe or a file is a system call, which cost a cache hit ~6 % of its CPU
 * (`npx tsx bench/floors.bench.ts --profile`). Lines keep their order, are never merged or cut, and reach stdout
 * when the turn's I/O is done (`setImmediate`), or as soon as `FLUSH_BYTES` are waiting; whatever waits is written
 * synchronously when the process exits (also after an uncaught exception, and `process.exit`), so no line is lost
 * but to SIGKILL. The writes themselves are pino's own synchronous destination (sonic-boom: retries EAGAIN on a
 * non-blocking pipe, stops quietly on EPIPE).
 */
import pino, { type DestinationStream } from "pino";

/** Waiting text (UTF-16 code units) that is written at once, without waiting for the timer. */
export const FLUSH_BYTES = 16 * 1024;

interface Writer {
  write(text: string): unknown;
}

/** Lines collected and written to `out` in one piece (`flushSync`), at the end of the turn that logged them. */
export class BatchedDestination implements DestinationStream {
  private pending = "";
  private timer: NodeJS.Immediate | undefined;

  constructor(private readonly out: Writer) {}

  write(line: string): void {
    this.pending += line;
    if (this.pending.length >= FLUSH_BYTES) this.flushSync();
    else if (this.timer === undefined) {
      this.timer = setImmediate(() => this.flushSync());
      // Waiting lines never keep the process alive: an exit writes them (`stdoutDestination`).
      this.timer.unref();
    }
  }

  /** Writes every waiting line now (pino's `logger.flush()` calls it too). */
  flushSync(): void {
    if (this.timer !== undefined) {
      clearImmediate(this.timer);
      this.timer = undefined;
    }
    if (this.pending === "") return;
    const text = this.pending;
    this.pending = "";
    this.out.write(text);
  }

  flush(cb?: (err?: Error) => void): void {
    this.flushSync();
    cb?.();
  }
}

let stdout: BatchedDestination | undefined;

/** The process's one batched stdout (every logger `createLogger` makes without a destination writes to it). */
export function stdoutDestination(): BatchedDestination {
  if (stdout === undefined) {
    const batched = new BatchedDestination(pino.destination({ dest: 1, sync: true }));
    process.on("exit", () => batched.flushSync());
    stdout = batched;
  }
  return stdout;
}
