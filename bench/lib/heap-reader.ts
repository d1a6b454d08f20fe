import type { ChildProcess } from "node:child_process";

/**
 * The bench side of a heap probe preloaded into a gateway child (bench/gateway/heap-probe.cjs,
 * bench/soak/heap-probe.cjs): SIGUSR2 makes the child force a GC and print `<TAG> {json}` on stderr; `heap()` sends
 * the signal and resolves with that JSON. Keeps the last of the child's stderr for error messages (`tail`).
 */
export class HeapReader<T> {
  private stderr = "";
  private readonly waiters: Array<(sample: T) => void> = [];

  constructor(
    private readonly child: ChildProcess,
    tag: string,
  ) {
    const line = new RegExp(`${tag} (\\{[^\\n]*\\})\\n`);
    child.stderr?.on("data", (c: Buffer) => {
      this.stderr += c.toString();
      for (;;) {
        const m = line.exec(this.stderr);
        if (m?.[1] === undefined) break;
        this.stderr = this.stderr.slice(m.index + m[0].length);
        this.waiters.shift()?.(JSON.parse(m[1]) as T);
      }
      if (this.stderr.length > 64_000) this.stderr = this.stderr.slice(-16_000);
    });
  }

  /** What the child last wrote on stderr (at most 64 KB). */
  get tail(): string {
    return this.stderr;
  }

  heap(timeoutMs = 10_000): Promise<T> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("no heap sample from the gateway")), timeoutMs);
      this.waiters.push((sample) => {
        clearTimeout(timer);
        resolve(sample);
      });
      this.child.kill("SIGUSR2");
    });
  }
}
