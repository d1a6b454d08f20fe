/** The part of autocannon 9's programmatic API that the benches use (the package ships no types). */
declare module "autocannon" {
  namespace autocannon {
    interface Request {
      method?: string;
      path?: string;
      headers?: Record<string, string>;
      body?: string;
      setupRequest?: (req: Request, context: Record<string, unknown>) => Request;
    }
    interface Options {
      url: string;
      connections?: number;
      duration?: number;
      amount?: number;
      pipelining?: number;
      timeout?: number;
      method?: string;
      headers?: Record<string, string>;
      body?: string;
      requests?: Request[];
    }
    interface Histogram {
      average: number;
      mean: number;
      stddev: number;
      min: number;
      max: number;
      p50: number;
      p90: number;
      p99: number;
      total: number;
      sent?: number;
    }
    interface Tracker {
      on(
        event: "response",
        listener: (client: unknown, statusCode: number, resBytes: number, responseTimeMs: number) => void,
      ): Tracker;
      on(event: "reqError", listener: (err: Error) => void): Tracker;
      stop(): void;
    }
    interface Result {
      requests: Histogram;
      latency: Histogram;
      throughput: Histogram;
      errors: number;
      timeouts: number;
      non2xx: number;
      duration: number;
      "2xx": number;
    }
  }
  /** The callback form returns the run's tracker: `response` fires per answer with its time in ms (float). */
  function autocannon(
    opts: autocannon.Options,
    done: (err: Error | null, result: autocannon.Result) => void,
  ): autocannon.Tracker;
  function autocannon(opts: autocannon.Options): Promise<autocannon.Result>;
  export = autocannon;
}
