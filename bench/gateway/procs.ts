/**
 * Child processes for the gateway bench: free ports, waiting for a port or a URL, a private redis-server, and
 * bench helper processes (bench/gateway/servers.ts, bench/gateway/load.ts) that talk over an IPC channel.
 */
import { type ChildProcess, fork, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { createConnection, createServer } from "node:net";

/** Every child this bench started: killed when the bench exits, however it exits (no orphan keeps a port). */
const children = new Set<ChildProcess>();
process.on("exit", () => {
  for (const child of children)
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
});
for (const signal of ["SIGINT", "SIGTERM"] as const) process.once(signal, () => process.exit(130));

export function track(child: ChildProcess): ChildProcess {
  children.add(child);
  child.once("exit", () => children.delete(child));
  return child;
}

/**
 * CPU time (user + system) a process has used so far, in ms, from /proc/<pid>/stat (Linux; clock ticks of 10 ms).
 * NaN where there is no /proc.
 */
export function cpuMs(pid: number | undefined): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return Number.NaN;
  }
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const a = srv.address();
      const port = typeof a === "object" && a !== null ? a.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

export async function until(what: string, check: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = "";
  while (Date.now() < deadline) {
    const ok = await check().catch((err: unknown) => {
      last = err instanceof Error ? err.message : String(err);
      return false;
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}${last === "" ? "" : ` (last: ${last})`}`);
}

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createConnection(port, "127.0.0.1");
    s.once("connect", () => {
      s.destroy();
      resolve(true);
    });
    s.once("error", () => resolve(false));
  });
}

/** Waits for a child to exit (SIGTERM, then SIGKILL after `graceMs`). */
export async function stopChild(child: ChildProcess, graceMs = 15_000): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
  const code = await exited;
  clearTimeout(timer);
  return code;
}

/** A private redis-server on 127.0.0.1 without persistence, for this run only. */
export async function startRedis(): Promise<{ url: string; child: ChildProcess }> {
  const port = await freePort();
  const args = ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"];
  const child = track(spawn("redis-server", args, { stdio: "ignore" }));
  const failed = new Promise<never>((_, reject) =>
    child.once("error", (err) =>
      reject(new Error(`cannot run redis-server (${err.message}): apt-get install redis-server`)),
    ),
  );
  await Promise.race([failed, until(`redis-server on ${port}`, () => portOpen(port), 5000)]);
  return { url: `redis://127.0.0.1:${port}`, child };
}

/**
 * A bench helper script run in its own Node process (with this process's tsx loader), answering requests over
 * IPC: `ask(message)` resolves with the child's next reply.
 */
export class Helper<Req, Res> {
  private readonly waiting: Array<(m: Res) => void> = [];

  private constructor(readonly child: ChildProcess) {
    child.on("message", (m: Res) => this.waiting.shift()?.(m));
  }

  static async start<Req, Res>(
    script: string,
    args: string[],
  ): Promise<{ helper: Helper<Req, Res>; hello: Res }> {
    const child = track(
      fork(script, args, {
        execArgv: process.execArgv,
        env: { PATH: process.env.PATH ?? "" },
        stdio: ["ignore", "ignore", "inherit", "ipc"],
      }),
    );
    const helper = new Helper<Req, Res>(child);
    const hello = await helper.next(30_000);
    return { helper, hello };
  }

  private next(timeoutMs: number): Promise<Res> {
    return new Promise((resolve, reject) => {
      const onExit = (code: number | null) => reject(new Error(`helper exited (${code}) before answering`));
      const timer = setTimeout(() => reject(new Error("helper did not answer in time")), timeoutMs);
      this.child.once("exit", onExit);
      this.waiting.push((m) => {
        clearTimeout(timer);
        this.child.off("exit", onExit);
        resolve(m);
      });
    });
  }

  ask(message: Req, timeoutMs = 120_000): Promise<Res> {
    const reply = this.next(timeoutMs);
    this.child.send(message as object);
    return reply;
  }

  stop(): Promise<number | null> {
    return stopChild(this.child, 5000);
  }
}
