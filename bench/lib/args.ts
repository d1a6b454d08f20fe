import type { Mode } from "../gateway/report";

/**
 * The command-line flags the whole-gateway benches share (bench/gateway.bench.ts, bench/zep.bench.ts):
 * `--quick`, `--profile`, `--no-build`, `--rate=N`, `--only=a,b`, `--env=NAME=value,…`, `--seconds=N`, `--modes=seq,rate,max`,
 * and any other `--name=value` through `flag`. `seconds` gives each mode's run length (after the warm-up) when
 * `--seconds` is not set: the first for a full run, the second for `--quick`.
 */
export function benchArgs(
  argv: readonly string[],
  seconds: { full: Record<Mode, number>; quick: Record<Mode, number> },
) {
  const flag = (name: string) => argv.find((a) => a.startsWith(`--${name}=`))?.split("=")[1];
  const quick = argv.includes("--quick");
  const secondsFlag = Number(flag("seconds") ?? Number.NaN);
  const modes = flag("modes")?.split(",");
  return {
    flag,
    quick,
    profile: argv.includes("--profile"),
    /** Build dist/ first (the benches run the compiled gateway); `--no-build` skips it. */
    build: !argv.includes("--no-build"),
    rate: Number(flag("rate") ?? 500),
    only: flag("only")?.split(","),
    /** Extra environment for the gateways under test. */
    gatewayEnv: Object.fromEntries(
      (
        argv
          .find((a) => a.startsWith("--env="))
          ?.slice("--env=".length)
          .split(",") ?? []
      )
        .filter((kv) => kv.includes("="))
        .map((kv) => [kv.slice(0, kv.indexOf("=")), kv.slice(kv.indexOf("=") + 1)]),
    ) as Record<string, string>,
    rounds: quick ? 1 : 2,
    seconds:
      secondsFlag > 0
        ? ({ seq: secondsFlag, rate: secondsFlag, max: secondsFlag } as Record<Mode, number>)
        : quick
          ? seconds.quick
          : seconds.full,
    warmupSeconds: quick ? 0.5 : 1,
    modes: (["seq", "rate", "max"] as const).filter((m) => modes === undefined || modes.includes(m)),
  };
}
