/** LinkedSignal (src/signals.ts): one signal for a caller's signal, a deadline and an explicit abort. */
import { LinkedSignal } from "../src/signals";

const tick = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("LinkedSignal", () => {
  test("follows the parent, with the parent's reason; its own time has not run out", () => {
    const parent = new AbortController();
    const link = new LinkedSignal(parent.signal, 10_000);
    parent.abort(new Error("client gone"));
    expect(link.signal.aborted).toBe(true);
    expect((link.signal.reason as Error).message).toBe("client gone");
    expect(link.timedOut).toBe(false);
    link.dispose();
  });

  test("after the parent aborted, its own time never runs out (the timer is released)", async () => {
    const parent = new AbortController();
    const link = new LinkedSignal(parent.signal, 5);
    parent.abort("gone");
    await tick(30);
    expect(link.timedOut).toBe(false);
    expect(link.signal.reason).toBe("gone");
  });

  test("a parent already aborted: aborted at once", () => {
    const parent = new AbortController();
    parent.abort("gone");
    expect(new LinkedSignal(parent.signal, 10).signal.reason).toBe("gone");
  });

  test("times out with a TimeoutError, as AbortSignal.timeout does", async () => {
    const link = new LinkedSignal(undefined, 5);
    await tick(30);
    expect(link.signal.aborted).toBe(true);
    expect(link.timedOut).toBe(true);
    expect((link.signal.reason as DOMException).name).toBe("TimeoutError");
  });

  test("abort() aborts; dispose() releases the timer and the parent's listener", async () => {
    const parent = new AbortController();
    const aborted = new LinkedSignal(parent.signal, 10_000);
    aborted.abort();
    expect(aborted.signal.aborted).toBe(true);
    expect(parent.signal.aborted).toBe(false);
    aborted.dispose();

    const disposed = new LinkedSignal(parent.signal, 5);
    disposed.dispose();
    await tick(30);
    parent.abort();
    expect(disposed.signal.aborted).toBe(false);
    expect(disposed.timedOut).toBe(false);
  });
});
