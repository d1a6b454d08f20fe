import { type CircuitState, ConsecutiveBreaker, CountBreaker, type IBreaker } from "cockatiel";

/**
 * Opens on N consecutive failures OR on a failure ratio over the last `window` calls, whichever trips first:
 * the first catches a backend that went down at once (a few requests fail in a row), the second one that fails
 * every other call (a sick replica behind a load balancer), which never gives N failures in a row.
 */
export class EitherBreaker implements IBreaker {
  private readonly consecutive: ConsecutiveBreaker;
  private readonly ratio: CountBreaker;

  constructor(opts: { consecutive: number; ratio: number; window: number; minimumCalls: number }) {
    this.consecutive = new ConsecutiveBreaker(opts.consecutive);
    this.ratio = new CountBreaker({
      threshold: opts.ratio,
      size: opts.window,
      minimumNumberOfCalls: Math.min(opts.window, opts.minimumCalls),
    });
  }

  get state(): unknown {
    return { consecutive: this.consecutive.state, ratio: this.ratio.state };
  }

  set state(value: unknown) {
    if (typeof value !== "object" || value === null) return;
    const v = value as { consecutive?: unknown; ratio?: unknown };
    if (typeof v.consecutive === "number") this.consecutive.state = v.consecutive;
    if (v.ratio !== undefined) this.ratio.state = v.ratio;
  }

  success(state: CircuitState): void {
    this.consecutive.success();
    this.ratio.success(state);
  }

  failure(state: CircuitState): boolean {
    // Both observe every failure (no short-circuit), so each keeps an accurate count.
    const inARow = this.consecutive.failure();
    const share = this.ratio.failure(state);
    return inARow || share;
  }
}
