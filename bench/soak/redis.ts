import { type ChildProcess, spawn } from "node:child_process";
import { createConnection } from "node:net";

/** A private redis-server on 127.0.0.1 (no persistence) that the soak stops and starts again on the same port. */
export class SoakRedis {
  private child: ChildProcess | undefined;

  constructor(readonly port: number) {}

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  get running(): boolean {
    return this.child !== undefined;
  }

  async start(): Promise<void> {
    const args = ["--port", String(this.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"];
    const child = spawn("redis-server", args, { stdio: "ignore" });
    this.child = child;
    const failed = new Promise<never>((_, reject) =>
      child.once("error", (err) =>
        reject(new Error(`cannot run redis-server (${err.message}): apt-get install redis-server`)),
      ),
    );
    await Promise.race([failed, waitForPort(this.port, 5000)]);
  }

  /** Abrupt stop (SIGKILL: clients get no goodbye), as a crashed or partitioned Redis looks to the gateway. */
  async kill(): Promise<void> {
    const child = this.child;
    this.child = undefined;
    if (child === undefined || child.exitCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    child.kill("SIGKILL");
    await exited;
  }
}

async function waitForPort(port: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const open = await new Promise<boolean>((resolve) => {
      const s = createConnection(port, "127.0.0.1");
      s.once("connect", () => {
        s.destroy();
        resolve(true);
      });
      s.once("error", () => resolve(false));
    });
    if (open) return;
    if (Date.now() > deadline)
      throw new Error(`redis-server did not listen on ${port} within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
