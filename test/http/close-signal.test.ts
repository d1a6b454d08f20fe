/** `closeSignal` (src/http/plain.ts): `abortOnClose`'s signal, made only when asked for, with the same verdicts. */
import { EventEmitter } from "node:events";
import type { ServerResponse } from "node:http";
import { abortOnClose, closeSignal } from "../../src/http/plain";

const response = (finished: boolean) =>
  Object.assign(new EventEmitter(), { writableFinished: finished }) as unknown as ServerResponse;

describe("closeSignal", () => {
  it.each([
    ["asked before the client goes away", true],
    ["asked after the client went away", false],
  ])("aborts as abortOnClose does: %s", (_name, askFirst) => {
    const res = response(false);
    const eager = abortOnClose(res);
    const lazy = closeSignal(res);
    const early = askFirst ? lazy() : undefined;
    expect(early?.aborted).toBe(askFirst ? false : undefined);
    res.emit("close");
    expect(eager.aborted).toBe(true);
    expect(lazy().aborted).toBe(true);
    expect(lazy()).toBe(lazy());
  });

  it("stays unaborted when the answer was written before the close", () => {
    const res = response(true);
    const eager = abortOnClose(res);
    const lazy = closeSignal(res);
    res.emit("close");
    expect(eager.aborted).toBe(false);
    expect(lazy().aborted).toBe(false);
  });
});
