/**
 * docker-compose.yml, the files it mounts and the Dockerfile it builds, checked without Docker: there is no Docker
 * engine on the development machines and `docker compose` is not installed, so `docker compose config` cannot
 * run. What is checked instead:
 * - the compose file's structure (services, images or builds, depends_on and their conditions, healthchecks,
 *   ports on 127.0.0.1, bind mounts of files that exist in the repository);
 * - memgate's environment: every name is one memgate reads (src/config/env.ts, or an OTEL_* variable its
 *   telemetry documents), and the values pass the gateway's own boot validation (parseEnv, readTelemetryConfig);
 *   the mounted tenants file loads with the gateway's loader; paths under /app exist in the image or a mount;
 * - the wiring between services: Redis, the collector's OTLP receiver, Jaeger, Prometheus's scrape target and rule
 *   file, Grafana's data source and dashboards;
 * - the collector config: pipelines name only defined components, every component is used and exists in the
 *   core distribution the compose file runs;
 * - the Dockerfile: stages, `npm ci --omit=dev` for the runtime's node_modules, a non-root user, a HEALTHCHECK
 *   on /healthz, the port, COPY sources present and not excluded by .dockerignore.
 */
import { existsSync, readFileSync, statSync } from "node:fs";
import { join, normalize, posix } from "node:path";
import { parse as parseYaml } from "yaml";
import { envSchema, parseEnv } from "../../src/config/env";
import { readTelemetryConfig } from "../../src/telemetry/config";
import { loadTenantsFile } from "../../src/tenants/file";

const ROOT = join(__dirname, "../..");
const read = (file: string) => readFileSync(join(ROOT, file), "utf8");

type Doc = Record<string, unknown>;
const isRecord = (v: unknown): v is Doc => typeof v === "object" && v !== null && !Array.isArray(v);
const record = (v: unknown): Doc => (isRecord(v) ? v : {});
const strings = (v: unknown): string[] => (Array.isArray(v) ? v.map(String) : []);

// --- the compose file -------------------------------------------------------------------------------------

const TOP_LEVEL = new Set(["name", "services", "networks", "volumes", "configs", "secrets"]);
const SERVICE_KEYS = new Set([
  "build",
  "image",
  "command",
  "environment",
  "volumes",
  "ports",
  "depends_on",
  "healthcheck",
  "restart",
]);
const CONDITIONS = new Set(["service_started", "service_healthy", "service_completed_successfully"]);
const DURATION = /^(\d+(\.\d+)?(ns|us|ms|s|m|h))+$/;
const PORT = /^(?:(\d{1,3}(?:\.\d{1,3}){3}):)?(\d{1,5}):(\d{1,5})(?:\/(tcp|udp))?$/;

interface Port {
  ip: string | undefined;
  host: number;
  container: number;
}
interface Mount {
  source: string;
  target: string;
  readOnly: boolean;
}

function portsOf(service: Doc): Port[] {
  return strings(service.ports).map((p) => {
    const m = PORT.exec(p);
    if (m === null) throw new Error(`port "${p}" is not [ip:]host:container`);
    return { ip: m[1], host: Number(m[2]), container: Number(m[3]) };
  });
}

function mountsOf(service: Doc): Mount[] {
  return strings(service.volumes).map((v) => {
    const [source = "", target = "", mode] = v.split(":");
    return { source, target, readOnly: mode === "ro" };
  });
}

function environmentOf(service: Doc): Record<string, string> {
  const env = service.environment;
  if (Array.isArray(env))
    return Object.fromEntries(env.map((e) => String(e).split(/=(.*)/s).slice(0, 2) as [string, string]));
  return Object.fromEntries(Object.entries(record(env)).map(([k, v]) => [k, String(v)]));
}

/** A repository path for a bind mount's source: relative, inside the repository. */
function repoPath(source: string): string | undefined {
  if (!source.startsWith("./")) return undefined;
  const path = normalize(source);
  return path.startsWith("..") ? undefined : path;
}

/** What is structurally wrong with a compose document ([] when nothing is). */
function composeProblems(doc: Doc, dockerfileStages: readonly string[]): string[] {
  const problems: string[] = [];
  for (const key of Object.keys(doc)) if (!TOP_LEVEL.has(key)) problems.push(`top-level key ${key}`);
  const services = record(doc.services);
  if (Object.keys(services).length === 0) problems.push("no services");
  const hostPorts = new Map<number, string>();
  for (const [name, value] of Object.entries(services)) {
    const s = record(value);
    for (const key of Object.keys(s))
      if (!SERVICE_KEYS.has(key)) problems.push(`${name}: unexpected key ${key}`);
    if (s.image === undefined && s.build === undefined) problems.push(`${name}: neither image nor build`);
    if (
      typeof s.image === "string" &&
      s.build === undefined &&
      !/^[a-z0-9./_-]+:[A-Za-z0-9._-]+$/.test(s.image)
    )
      problems.push(`${name}: image ${s.image} has no pinned tag`);
    if (typeof s.image === "string" && s.image.endsWith(":latest"))
      problems.push(`${name}: image tag latest`);
    if (s.build !== undefined) {
      const b = record(s.build);
      const context = repoPath(`./${String(b.context ?? ".").replace(/^\.\/?/, "")}`);
      const dockerfile = join(context ?? "", String(b.dockerfile ?? "Dockerfile"));
      if (context === undefined || !existsSync(join(ROOT, dockerfile)))
        problems.push(`${name}: build file ${dockerfile} missing`);
      if (b.target !== undefined && !dockerfileStages.includes(String(b.target)))
        problems.push(`${name}: build target ${String(b.target)} is not a Dockerfile stage`);
    }
    const deps = Array.isArray(s.depends_on)
      ? Object.fromEntries(strings(s.depends_on).map((d) => [d, { condition: "service_started" }]))
      : record(s.depends_on);
    for (const [dep, spec] of Object.entries(deps)) {
      if (!(dep in services)) problems.push(`${name}: depends on unknown service ${dep}`);
      const condition = String(record(spec).condition);
      if (!CONDITIONS.has(condition)) problems.push(`${name}: depends_on ${dep} condition ${condition}`);
      if (condition === "service_healthy" && record(services[dep]).healthcheck === undefined)
        problems.push(`${name}: waits for ${dep} to be healthy, but ${dep} has no healthcheck`);
    }
    if (s.healthcheck !== undefined) {
      const h = record(s.healthcheck);
      const test = h.test;
      const form = Array.isArray(test) ? String(test[0]) : typeof test === "string" ? "string" : "none";
      if (!["CMD", "CMD-SHELL", "string"].includes(form)) problems.push(`${name}: healthcheck test ${form}`);
      for (const key of ["interval", "timeout", "start_period"]) {
        if (h[key] !== undefined && !DURATION.test(String(h[key])))
          problems.push(`${name}: healthcheck ${key} is not a duration`);
      }
    }
    try {
      for (const p of portsOf(s)) {
        if (p.ip !== "127.0.0.1") problems.push(`${name}: port ${p.host} published beyond 127.0.0.1`);
        const other = hostPorts.get(p.host);
        if (other !== undefined) problems.push(`${name}: host port ${p.host} also used by ${other}`);
        hostPorts.set(p.host, name);
      }
    } catch (err) {
      problems.push(`${name}: ${(err as Error).message}`);
    }
    for (const m of mountsOf(s)) {
      const path = repoPath(m.source);
      if (path === undefined) problems.push(`${name}: mount ${m.source} is not a path inside the repository`);
      else if (!existsSync(join(ROOT, path)))
        problems.push(`${name}: mount source ${m.source} does not exist`);
      if (!m.target.startsWith("/")) problems.push(`${name}: mount target ${m.target} is not absolute`);
      if (!m.readOnly) problems.push(`${name}: mount ${m.source} is not read-only`);
    }
  }
  return problems;
}

/** The repository file behind a container path of `service`, through its bind mounts. */
function mountedFile(service: Doc, containerPath: string): string | undefined {
  for (const m of mountsOf(service)) {
    const source = repoPath(m.source);
    if (source === undefined) continue;
    if (containerPath === m.target) return source;
    if (containerPath.startsWith(`${m.target}/`))
      return join(source, containerPath.slice(m.target.length + 1));
  }
  return undefined;
}

// --- the Dockerfile ---------------------------------------------------------------------------------------

interface Instruction {
  op: string;
  args: string;
}
interface Stage {
  name: string;
  from: string;
  instructions: Instruction[];
}

function parseDockerfile(text: string): Stage[] {
  const lines = text
    .replace(/\\\r?\n(\s*#.*\r?\n)*/g, " ")
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l !== "" && !l.startsWith("#"));
  const stages: Stage[] = [];
  for (const line of lines) {
    const [, op = "", args = ""] = /^(\S+)\s*(.*)$/.exec(line) ?? [];
    if (op.toUpperCase() === "FROM") {
      const m = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(args);
      stages.push({ from: m?.[1] ?? args, name: m?.[2] ?? String(stages.length), instructions: [] });
      continue;
    }
    const stage = stages[stages.length - 1];
    if (stage === undefined) continue; // ARG / syntax before the first FROM
    stage.instructions.push({ op: op.toUpperCase(), args: args.replace(/\s+/g, " ") });
  }
  return stages;
}

/** COPY's flags (`--from=x`, `--chown=…`) and its sources and destination. */
function copyOf(args: string): { from: string | undefined; sources: string[]; dest: string } {
  const words = args.split(" ");
  const flags = words.filter((w) => w.startsWith("--"));
  const rest = words.filter((w) => !w.startsWith("--"));
  const from = flags.find((f) => f.startsWith("--from="))?.slice("--from=".length);
  return { from, sources: rest.slice(0, -1), dest: rest[rest.length - 1] ?? "" };
}

/** Whether `.dockerignore` (simple patterns: names, globs with *) excludes a context path. */
function dockerignored(path: string, patterns: readonly string[]): boolean {
  return patterns.some((p) => {
    const re = new RegExp(`^${p.replace(/[.+^${}()|[\]\\]/g, "\\$&").replace(/\*/g, "[^/]*")}(/.*)?$`);
    return re.test(path);
  });
}

// --- the tests --------------------------------------------------------------------------------------------

const compose = parseYaml(read("docker-compose.yml")) as Doc;
const services = record(compose.services);
const memgate = record(services.memgate);
const env = environmentOf(memgate);
const stages = parseDockerfile(read("Dockerfile"));
const runtime = stages[stages.length - 1] as Stage;
const collector = parseYaml(read("deploy/otel-collector/config.yaml")) as Doc;

/** `host:port` of a URL or of `host:port`. */
function hostPort(text: string): { host: string; port: number } {
  const url = new URL(text.includes("://") ? text : `tcp://${text}`);
  return { host: url.hostname, port: Number(url.port) };
}

/**
 * Node.js LTS lines and the day their upstream support ends (https://github.com/nodejs/Release): the image must
 * be on one still supported. Add the next LTS line here when it comes.
 */
const LTS_END_OF_LIFE: Readonly<Record<number, string>> = {
  20: "2026-04-30",
  22: "2027-04-30",
  24: "2028-04-30",
};

/** Whether an engines range of `^X.Y.Z` / `>=X.Y.Z` alternatives admits some release of `major`. */
function admitsMajor(engines: string, major: number): boolean {
  return engines.split("||").some((alternative) => {
    const m = /^\s*(\^|>=)\s*(\d+)(?:\.\d+){0,2}\s*$/.exec(alternative);
    if (m === null) throw new Error(`engines: unexpected range ${alternative}`);
    return m[1] === "^" ? Number(m[2]) === major : major >= Number(m[2]);
  });
}

describe("docker-compose.yml (checked without Docker: no engine here)", () => {
  test("is a compose file whose services, builds, dependencies, healthchecks, ports and mounts hold together", () => {
    expect(
      composeProblems(
        compose,
        stages.map((s) => s.name),
      ),
    ).toEqual([]);
    expect(Object.keys(services).sort()).toEqual(
      expect.arrayContaining(["memgate", "redis", "otel-collector", "jaeger"]),
    );
    expect(record(memgate.build).target).toBe(runtime.name);
  });

  test("memgate's environment: names memgate reads, values its boot accepts", () => {
    const known = new Set(Object.keys(envSchema.shape));
    const documentedOtel = new Set(
      [
        read("docs/observability.md"),
        read("src/telemetry/config.ts"),
        read("src/telemetry/metric-readers.ts"),
      ]
        .join("\n")
        .match(/OTEL_[A-Z_]*[A-Z]/g),
    );
    const unknown = Object.keys(env).filter((name) =>
      name.startsWith("OTEL_") ? !documentedOtel.has(name) : !known.has(name),
    );
    expect(unknown).toEqual([]);
    const parsed = parseEnv(env);
    expect(parsed.HOST).toBe("0.0.0.0"); // reachable from the other containers: so a tenants file is required
    expect(readTelemetryConfig(env)).toMatchObject({ traces: ["otlp"], disabled: false });
  });

  test("the tenants file it mounts loads with the gateway's loader, and paths under /app exist in the image", async () => {
    const file = mountedFile(memgate, env.MEMGATE_TENANTS_FILE ?? "");
    expect(file).toBe("deploy/compose/tenants.yaml");
    // Relative data files resolve against the working directory: /app in the image, the repository here.
    const directory = await loadTenantsFile(join(ROOT, file ?? ""), env);
    expect(directory.tenants().map((t) => t.id)).toEqual(["compose"]);
    const copied = runtime.instructions
      .filter((i) => i.op === "COPY")
      .map((i) => posix.join("/app", copyOf(i.args).dest));
    // The tenant's local data file (the loader does not open it): in the repository and copied into /app.
    const dataFile = directory.tenants()[0]?.backends.local?.dataFile ?? "";
    expect(existsSync(join(ROOT, dataFile))).toBe(true);
    expect(copied.some((d) => posix.join("/app", dataFile).startsWith(`${d}/`))).toBe(true);
    for (const [name, value] of Object.entries(env).filter(([, v]) => v.startsWith("/app/"))) {
      const inImage = copied.some((d) => value === d || value.startsWith(`${d}/`));
      expect({ name, value, present: inImage || mountedFile(memgate, value) !== undefined }).toEqual({
        name,
        value,
        present: true,
      });
    }
  });

  test("memgate: the port it listens on is the one published, exposed, health-checked and scraped", () => {
    const port = Number(env.PORT);
    expect(portsOf(memgate).map((p) => p.container)).toEqual([port]);
    expect(runtime.instructions.find((i) => i.op === "EXPOSE")?.args).toBe(String(port));
    expect(strings(record(memgate.healthcheck).test).join(" ")).toContain(`http://127.0.0.1:${port}/healthz`);
    const prometheus = parseYaml(read("deploy/prometheus/prometheus.yml")) as Doc;
    const job = (prometheus.scrape_configs as Doc[]).find((j) => j.job_name === "memgate");
    expect(job?.metrics_path ?? "/metrics").toBe("/metrics");
    const targets = ((job?.static_configs ?? []) as Doc[]).flatMap((c) => strings(c.targets));
    expect(targets).toEqual([`memgate:${port}`]);
  });

  test("the services reach each other where they listen: Redis, collector, Jaeger, Prometheus, Grafana", () => {
    const redis = hostPort(env.REDIS_URL ?? "");
    expect(redis).toEqual({ host: "redis", port: 6379 });
    expect(services).toHaveProperty(redis.host);

    // memgate → collector (OTLP/HTTP) → Jaeger (OTLP/gRPC, on by default in all-in-one).
    const otlp = hostPort(env.OTEL_EXPORTER_OTLP_ENDPOINT ?? "");
    expect(services).toHaveProperty(otlp.host);
    const protocols = record(record(record(collector.receivers).otlp).protocols);
    expect(env.OTEL_EXPORTER_OTLP_PROTOCOL).toMatch(/^http\//);
    expect(hostPort(String(record(protocols.http).endpoint)).port).toBe(otlp.port);
    const jaeger = hostPort(String(record(record(collector.exporters)["otlp/jaeger"]).endpoint));
    expect(jaeger).toEqual({ host: "jaeger", port: 4317 });
    expect(services).toHaveProperty(jaeger.host);
    expect(String(record(services.jaeger).image)).toMatch(/^jaegertracing\/all-in-one:/);
    const collectorService = record(services["otel-collector"]);
    const configFlag = strings(collectorService.command).find((c) => c.startsWith("--config="));
    expect(mountedFile(collectorService, configFlag?.slice("--config=".length) ?? "")).toBe(
      "deploy/otel-collector/config.yaml",
    );

    // Prometheus: its config and the alert rules it loads are the repository's.
    const prom = record(services.prometheus);
    const promConfig = parseYaml(read("deploy/prometheus/prometheus.yml")) as Doc;
    const configFile = strings(prom.command)
      .find((c) => c.startsWith("--config.file="))
      ?.slice("--config.file=".length);
    expect(mountedFile(prom, configFile ?? "")).toBe("deploy/prometheus/prometheus.yml");
    expect(strings(promConfig.rule_files).map((f) => mountedFile(prom, f))).toEqual([
      "deploy/prometheus/alerts.yml",
    ]);

    // Grafana: the provisioned data source is the Prometheus service; the dashboards folder is mounted.
    const grafana = record(services.grafana);
    const datasources = parseYaml(read("deploy/grafana/provisioning/datasources/prometheus.yml")) as Doc;
    const ds = (datasources.datasources as Doc[])[0] ?? {};
    const promPort = portsOf(prom)[0]?.container;
    expect({ type: ds.type, ...hostPort(String(ds.url)) }).toEqual({
      type: "prometheus",
      host: "prometheus",
      port: promPort,
    });
    expect(mountedFile(grafana, "/etc/grafana/provisioning/datasources/prometheus.yml")).toBe(
      "deploy/grafana/provisioning/datasources/prometheus.yml",
    );
    const providers = parseYaml(read("deploy/grafana/provisioning/dashboards/memgate.yml")) as Doc;
    const path = String(record((providers.providers as Doc[])[0]?.options).path);
    const dashboards = mountedFile(grafana, path);
    expect(dashboards).toBe("deploy/grafana/dashboards");
    expect(existsSync(join(ROOT, dashboards ?? "", "memgate.json"))).toBe(true);
    const home = mountedFile(grafana, environmentOf(grafana).GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH ?? "");
    expect(home !== undefined && statSync(join(ROOT, home)).isFile()).toBe(true);
  });

  test("the collector config: pipelines name defined components, all used, all in the core distribution", () => {
    // Components of otel/opentelemetry-collector (core), the image the compose file runs.
    const core: Record<string, string[]> = {
      receivers: ["otlp"],
      processors: ["batch", "memory_limiter"],
      exporters: ["otlp", "otlphttp", "debug", "nop"],
    };
    const pipelines = record(record(collector.service).pipelines);
    expect(Object.keys(pipelines)).toEqual(expect.arrayContaining(["traces"]));
    const used = new Set<string>();
    for (const [pipeline, spec] of Object.entries(pipelines)) {
      expect(pipeline).toMatch(/^(traces|metrics|logs)(\/[\w-]+)?$/);
      for (const kind of ["receivers", "processors", "exporters"]) {
        for (const id of strings(record(spec)[kind])) {
          expect({ pipeline, kind, id, defined: id in record(collector[kind]) }).toEqual({
            pipeline,
            kind,
            id,
            defined: true,
          });
          used.add(`${kind}:${id}`);
        }
      }
      expect(strings(record(spec).receivers).length).toBeGreaterThan(0);
      expect(strings(record(spec).exporters).length).toBeGreaterThan(0);
    }
    for (const kind of ["receivers", "processors", "exporters"]) {
      for (const id of Object.keys(record(collector[kind]))) {
        expect({ kind, id, used: used.has(`${kind}:${id}`) }).toEqual({ kind, id, used: true });
        expect({ kind, id, core: core[kind]?.includes(id.split("/")[0] ?? "") }).toEqual({
          kind,
          id,
          core: true,
        });
      }
    }
    expect(String(record(services["otel-collector"]).image)).toMatch(/^otel\/opentelemetry-collector:/);
    // The traces pipeline ends at Jaeger.
    expect(strings(record(pipelines.traces).exporters)).toContain("otlp/jaeger");
  });

  test("the checks can fail: a broken compose document is reported", () => {
    const broken = structuredClone(compose);
    const s = record(broken.services);
    record(s.memgate).ports = ["8787:8787"];
    record(s.memgate).depends_on = {
      redis: { condition: "service_healthy" },
      ghost: { condition: "service_started" },
    };
    delete record(s.redis).healthcheck;
    record(s.prometheus).volumes = [
      "./deploy/prometheus/nope.yml:/etc/prometheus/prometheus.yml:ro",
      "../x:/x:ro",
    ];
    record(s.jaeger).image = "jaegertracing/all-in-one:latest";
    record(s.memgate).build = { context: ".", target: "nope" };
    broken.version = "3.9";
    const problems = composeProblems(
      broken,
      stages.map((st) => st.name),
    ).join("\n");
    for (const expected of [
      "top-level key version",
      "memgate: port 8787 published beyond 127.0.0.1",
      "memgate: depends on unknown service ghost",
      "memgate: waits for redis to be healthy, but redis has no healthcheck",
      "prometheus: mount source ./deploy/prometheus/nope.yml does not exist",
      "prometheus: mount ../x is not a path inside the repository",
      "jaeger: image tag latest",
      "memgate: build target nope is not a Dockerfile stage",
    ])
      expect(problems).toContain(expected);
  });
});

describe("Dockerfile", () => {
  test("multi-stage: the runtime's node_modules come from `npm ci --omit=dev`, its dist from the build", () => {
    expect(stages.map((s) => s.name)).toEqual(expect.arrayContaining(["build", "runtime"]));
    const copies = runtime.instructions.filter((i) => i.op === "COPY").map((i) => copyOf(i.args));
    const modules = copies.find((c) => c.dest === "./node_modules");
    const deps = stages.find((s) => s.name === modules?.from);
    const runs = (s: Stage | undefined) =>
      (s?.instructions ?? []).filter((i) => i.op === "RUN").map((i) => i.args);
    expect(runs(deps).some((r) => /\bnpm ci\b[^&]*--omit=dev/.test(r))).toBe(true);
    expect(runs(deps).some((r) => /\bnpm ci\b(?![^&]*--omit=dev)/.test(r))).toBe(false);
    const dist = copies.find((c) => c.dest === "./dist");
    expect(runs(stages.find((s) => s.name === dist?.from)).some((r) => r.includes("npm run build"))).toBe(
      true,
    );
    // No compiler or npm install in the runtime stage.
    expect(runs(runtime)).toEqual([]);
    // One Node line for every stage: an LTS line package.json's engines admit, still supported upstream.
    const engines = JSON.parse(read("package.json")).engines.node as string;
    const majors = new Set(stages.map((s) => Number(/^node:(\d+)-/.exec(s.from)?.[1])));
    expect(majors.size).toBe(1);
    const [major = 0] = majors;
    expect({ major, admitted: admitsMajor(engines, major) }).toEqual({ major, admitted: true });
    const end = LTS_END_OF_LIFE[major];
    expect({ major, lts: end !== undefined }).toEqual({ major, lts: true });
    expect({ major, supportedOn: new Date().toISOString().slice(0, 10) < (end ?? "") }).toEqual({
      major,
      supportedOn: true,
    });
  });

  test("the build stage copies every file `npm run build` reads (tsconfig files, scripts)", () => {
    const scripts = JSON.parse(read("package.json")).scripts as Record<string, string>;
    // The build script and the npm scripts it runs, their arguments that name repository files.
    const inputs = new Set<string>();
    const visit = (name: string, seen: Set<string>) => {
      const script = scripts[name];
      if (script === undefined || seen.has(name)) return;
      seen.add(name);
      for (const [, nested] of script.matchAll(/npm run (\S+)/g)) visit(nested ?? "", seen);
      for (const word of script.split(/[\s=]+/)) {
        const file = word.replace(/^\.\//, "");
        if (/[./]/.test(file) && existsSync(join(ROOT, file)) && statSync(join(ROOT, file)).isFile())
          inputs.add(file);
      }
    };
    visit("build", new Set());
    expect([...inputs]).toContain("tsconfig.build.json");
    const build = stages.find((s) =>
      s.instructions.some((i) => i.op === "RUN" && i.args.includes("npm run build")),
    );
    const copied = (build?.instructions ?? [])
      .filter((i) => i.op === "COPY")
      .map((i) => copyOf(i.args))
      .filter((c) => c.from === undefined)
      .flatMap((c) => c.sources);
    // tsconfig.build.json extends tsconfig.json: that one is read too.
    const extended = [...inputs]
      .filter((f) => f.endsWith(".json"))
      .map((f) => (JSON.parse(read(f)) as { extends?: string }).extends?.replace(/^\.\//, ""))
      .filter((f): f is string => f !== undefined);
    const missing = [...inputs, ...extended].filter(
      (f) => !copied.some((c) => f === c || f.startsWith(`${c.replace(/\/$/, "")}/`)),
    );
    expect(missing).toEqual([]);
  });

  test("runs as a non-root user, with a HEALTHCHECK on /healthz and the CMD of `memgate serve`", () => {
    const user = runtime.instructions.filter((i) => i.op === "USER").pop()?.args;
    expect(user).toBeDefined();
    expect(["root", "0", "0:0"]).not.toContain(user);
    const health = runtime.instructions.find((i) => i.op === "HEALTHCHECK")?.args ?? "";
    expect(health).toMatch(/\/healthz/);
    expect(health).toMatch(/--interval=\d+s/);
    expect(read("src/http/routes/ops.ts")).toContain('router.get("/healthz"');
    const cmd = JSON.parse(runtime.instructions.find((i) => i.op === "CMD")?.args ?? "[]") as string[];
    expect(cmd).toEqual(["node", "bin/memgate.js", "serve"]);
    expect(existsSync(join(ROOT, "bin/memgate.js"))).toBe(true);
    const port = /PORT=(\d+)/.exec(runtime.instructions.find((i) => i.op === "ENV")?.args ?? "")?.[1];
    expect(runtime.instructions.find((i) => i.op === "EXPOSE")?.args).toBe(port);
  });

  test("every file it copies from the build context exists and is not excluded by .dockerignore", () => {
    const ignore = read(".dockerignore")
      .split("\n")
      .map((l) => l.trim())
      .filter((l) => l !== "" && !l.startsWith("#"));
    const sources = stages.flatMap((s) =>
      s.instructions
        .filter((i) => i.op === "COPY")
        .map((i) => copyOf(i.args))
        .filter((c) => c.from === undefined)
        .flatMap((c) => c.sources),
    );
    expect(sources.length).toBeGreaterThan(5);
    for (const source of sources) {
      expect({
        source,
        exists: existsSync(join(ROOT, source)),
        ignored: dockerignored(source, ignore),
      }).toEqual({
        source,
        exists: true,
        ignored: false,
      });
    }
    expect(dockerignored("node_modules", ignore)).toBe(true); // the host's modules never enter the image
  });
});
