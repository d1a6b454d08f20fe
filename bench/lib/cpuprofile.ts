/**
 * Reads a V8 `.cpuprofile` (`node --cpu-prof`) and prints where the time went: the functions with the most self
 * time, and self time by package (each `node_modules/<pkg>`, memgate's own `dist/<folder>`, Node internals, GC).
 *
 *   npx tsx bench/lib/cpuprofile.ts <file.cpuprofile> [--top=30] [--inclusive[=REGEX]] [--from=SECONDS]
 *
 * `--inclusive` prints, instead, the busy time spent in each function *and what it called* (each sample counted once
 * per function on its stack; only functions whose `name where` matches REGEX, when given): where a request's time
 * goes by step (`sendBody`, `finish`, `traceRetrieval`, …). `--from` leaves out the profile's first seconds (start-up).
 *
 * The gateway bench runs it on the gateway's profile with `--profile` (bench/gateway.bench.ts).
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { int, table } from "./stats";

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}

interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

export interface ProfileSummary {
  /** µs sampled in total, and with the process idle. */
  totalUs: number;
  idleUs: number;
  functions: Array<{ name: string; where: string; us: number }>;
  packages: Array<{ name: string; us: number }>;
}

/** `node_modules/@opentelemetry/sdk-trace-base/…` → `@opentelemetry/sdk-trace-base`; `dist/cache/redis.js` → `memgate cache`. */
export function packageOf(url: string, fn: string): string {
  if (url === "") return fn.startsWith("(") ? fn : "(native)";
  const nm = url.lastIndexOf("node_modules/");
  if (nm >= 0) {
    const parts = url.slice(nm + "node_modules/".length).split("/");
    return parts[0]?.startsWith("@") ? `${parts[0]}/${parts[1] ?? ""}` : (parts[0] ?? "?");
  }
  const dist = /\/(?:dist|src)\/([^/]+)\//.exec(url);
  if (dist?.[1] !== undefined) return `memgate ${dist[1]}`;
  if (url.startsWith("node:")) return `node:${url.slice(5).split("/")[0] ?? ""}`;
  return url.split("/").slice(-1)[0] ?? url;
}

function shortWhere(url: string, line: number): string {
  if (url === "") return "";
  const nm = url.lastIndexOf("node_modules/");
  const rel = nm >= 0 ? url.slice(nm + "node_modules/".length) : url.replace(/^.*\/(dist|src)\//, "$1/");
  return `${rel.replace(/^file:\/\//, "")}:${line + 1}`;
}

export function summarizeProfile(profile: CpuProfile): ProfileSummary {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const selfUs = new Map<number, number>();
  for (let i = 0; i < profile.samples.length; i++) {
    const id = profile.samples[i] ?? -1;
    selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
  }
  const functions = new Map<string, { name: string; where: string; us: number }>();
  const packages = new Map<string, number>();
  let totalUs = 0;
  let idleUs = 0;
  for (const [id, us] of selfUs) {
    const node = byId.get(id);
    if (node === undefined) continue;
    const { functionName, url, lineNumber } = node.callFrame;
    totalUs += us;
    if (functionName === "(idle)") {
      idleUs += us;
      continue;
    }
    const name = functionName === "" ? "(anonymous)" : functionName;
    const where = shortWhere(url, lineNumber);
    const key = `${name}@${where}`;
    const f = functions.get(key) ?? { name, where, us: 0 };
    f.us += us;
    functions.set(key, f);
    const pkg = packageOf(url, name);
    packages.set(pkg, (packages.get(pkg) ?? 0) + us);
  }
  return {
    totalUs,
    idleUs,
    functions: [...functions.values()].sort((a, b) => b.us - a.us),
    packages: [...packages.entries()].map(([name, us]) => ({ name, us })).sort((a, b) => b.us - a.us),
  };
}

/** The two tables as text: top `top` functions and top packages by self time, as shares of the busy time. */
export function describeProfile(s: ProfileSummary, top = 25): string {
  const busy = Math.max(1, s.totalUs - s.idleUs);
  const pct = (us: number) => `${((us / busy) * 100).toFixed(1)}%`;
  const head = `sampled ${int(s.totalUs / 1000)} ms, busy ${int(busy / 1000)} ms (shares below are of the busy time)`;
  const fns = table(
    ["self ms", "share", "function", "where"],
    s.functions.slice(0, top).map((f) => [int(f.us / 1000), pct(f.us), f.name, f.where]),
    ["right", "right", "left", "left"],
  );
  const pkgs = table(
    ["self ms", "share", "package"],
    s.packages.slice(0, Math.ceil(top / 1.5)).map((p) => [int(p.us / 1000), pct(p.us), p.name]),
    ["right", "right", "left"],
  );
  return `${head}\n\n${fns}\n\n${pkgs}`;
}

export function readProfile(file: string): CpuProfile {
  return JSON.parse(readFileSync(file, "utf8")) as CpuProfile;
}

/**
 * What a bench prints for the profile `node --cpu-prof --cpu-prof-dir=<dir>` wrote: the two tables of
 * `describeProfile` and the file's path (to read again with this script), or "no profile written".
 */
export function profileReport(dir: string, top = 30): string {
  const file = readdirSync(dir).find((f) => f.endsWith(".cpuprofile"));
  if (file === undefined) return "no profile written";
  return `${describeProfile(summarizeProfile(readProfile(join(dir, file))), top)}\nprofile: ${join(dir, file)}`;
}

/**
 * Busy time by function including its callees (a sample counts once for every distinct function on its stack),
 * after the first `fromSeconds` of the profile, as shares of the busy time after it.
 */
export function inclusiveTimes(
  profile: CpuProfile,
  fromSeconds = 0,
): { busyUs: number; functions: Array<{ key: string; us: number }> } {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const inclusive = new Map<string, number>();
  let busyUs = 0;
  let t = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    const dt = profile.timeDeltas[i] ?? 0;
    t += dt;
    const leaf = byId.get(profile.samples[i] ?? -1);
    if (t < fromSeconds * 1e6 || leaf === undefined || leaf.callFrame.functionName === "(idle)") continue;
    busyUs += dt;
    const seen = new Set<string>();
    for (let id: number | undefined = leaf.id; id !== undefined; id = parent.get(id)) {
      const { functionName, url, lineNumber } = (byId.get(id) as ProfileNode).callFrame;
      seen.add(`${functionName === "" ? "(anonymous)" : functionName} ${shortWhere(url, lineNumber)}`);
    }
    for (const key of seen) inclusive.set(key, (inclusive.get(key) ?? 0) + dt);
  }
  const functions = [...inclusive.entries()].map(([key, us]) => ({ key, us })).sort((a, b) => b.us - a.us);
  return { busyUs, functions };
}

if (require.main === module) {
  const args = process.argv.slice(2);
  const file = args.find((a) => !a.startsWith("--"));
  const flag = (name: string) => args.find((a) => a === `--${name}` || a.startsWith(`--${name}=`));
  const top = Number(flag("top")?.split("=")[1] ?? 30);
  if (file === undefined) {
    console.error(
      "usage: npx tsx bench/lib/cpuprofile.ts <file.cpuprofile> [--top=30] [--inclusive[=REGEX]] [--from=SECONDS]",
    );
    process.exit(2);
  }
  const inclusive = flag("inclusive");
  if (inclusive === undefined) console.log(describeProfile(summarizeProfile(readProfile(file)), top));
  else {
    const pattern = inclusive.includes("=")
      ? new RegExp(inclusive.slice(inclusive.indexOf("=") + 1))
      : undefined;
    const from = Number(flag("from")?.split("=")[1] ?? 0);
    const { busyUs, functions } = inclusiveTimes(readProfile(file), from);
    console.log(`busy ${int(busyUs / 1000)} ms after the first ${from} s (shares below are of it)\n`);
    console.log(
      table(
        ["ms", "share", "function and its callees"],
        functions
          .filter((f) => pattern === undefined || pattern.test(f.key))
          .slice(0, top)
          .map((f) => [int(f.us / 1000), `${((100 * f.us) / Math.max(1, busyUs)).toFixed(1)}%`, f.key]),
        ["right", "right", "left"],
      ),
    );
  }
}
