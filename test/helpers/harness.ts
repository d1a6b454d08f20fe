import { cpSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import type { RequestListener } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { createLocalBackendFromRecords } from "../../src/backends/local";
import type { BackendFactories } from "../../src/backends/registry";
import { parseEnv } from "../../src/config/env";
import { createApp } from "../../src/http/app";
import { createLogger } from "../../src/logging/logger";
import { buildServices, type Services } from "../../src/server/services";
import { hashKey } from "../../src/tenants/keys";
import { FakeBackend } from "./fake-backend";

export const KEYS = {
  acmeChat: "mg_test_acme_chat_0123456789",
  acmeOps: "mg_test_acme_ops_0123456789",
  globex: "mg_test_globex_app_0123456789",
} as const;

/** Two tenants: acme (zep + openmemory, fake) and globex (local + zep, fake), with their own keys. */
export function tenantsYaml(): string {
  return `tenants:
  - id: acme
    keys:
      - { name: chat, sha256: ${hashKey(KEYS.acmeChat)}, scopes: [retrieve, proxy] }
      - { name: ops, sha256: ${hashKey(KEYS.acmeOps)}, scopes: [retrieve, admin] }
    policies: { allowed: ["*"], default: default }
    defaultBackend: zep
    backends:
      zep: { apiKeyEnv: ACME_ZEP_KEY, baseUrl: "https://zep.acme.test/api/v2" }
      openmemory: { url: "http://openmemory.acme.test", apiKeyEnv: ACME_OM_KEY, userScoping: user_id }
  - id: globex
    keys:
      - { name: app, sha256: ${hashKey(KEYS.globex)}, scopes: [retrieve] }
    policies: { allowed: [default], default: default }
    defaultBackend: local
    backends:
      local: { dataFile: globex.jsonl }
      zep: { apiKeyEnv: GLOBEX_ZEP_KEY }
`;
}

export interface Harness {
  app: RequestListener;
  services: Services;
  dir: string;
  zep: Record<string, FakeBackend>;
  openmemory: Record<string, FakeBackend>;
  /** Every log line written during the test. */
  logs: string[];
  close(): Promise<void>;
}

export interface HarnessOptions {
  /** Extra policy files: name → YAML text. */
  policies?: Record<string, string>;
  tenants?: string | null;
  env?: Record<string, string>;
  localRecords?: unknown[];
  watchPolicies?: boolean;
  /** Use these factories instead of the fakes (e.g. the real adapters against a fake server). */
  factories?: BackendFactories;
}

/** A fresh gateway per test: real wiring (buildServices), fake Zep/OpenMemory, real local backend. */
export async function makeHarness(opts: HarnessOptions = {}): Promise<Harness> {
  const dir = mkdtempSync(join(tmpdir(), "memgate-test-"));
  const policyDir = join(dir, "policies");
  cpSync(join(__dirname, "../../policies"), policyDir, { recursive: true });
  // A fixed `default` for the machinery tests (see the file's header): the shipped one is retuned on the golden set.
  cpSync(join(__dirname, "policies/default.yaml"), join(policyDir, "default.yaml"));
  writeFileSync(
    join(policyDir, "fast.yaml"),
    "name: fast\nversion: 1\ntokenizer: approx\nretrieval: { minScore: 0 }\ncache: { ttlSeconds: 60, staleSeconds: 3600 }\n",
  );
  for (const [name, text] of Object.entries(opts.policies ?? {}))
    writeFileSync(join(policyDir, `${name}.yaml`), text);
  const rawEnv: NodeJS.ProcessEnv = {
    MEMGATE_POLICY_DIR: policyDir,
    ACME_ZEP_KEY: "zep-secret-acme",
    ACME_OM_KEY: "om-secret-acme",
    GLOBEX_ZEP_KEY: "zep-secret-globex",
    LOG_LEVEL: "debug",
    ...opts.env,
  };
  if (opts.tenants !== null) {
    const file = join(dir, "tenants.yaml");
    writeFileSync(
      file,
      (opts.tenants ?? tenantsYaml()).replaceAll("globex.jsonl", join(dir, "globex.jsonl")),
    );
    rawEnv.MEMGATE_TENANTS_FILE = file;
  } else {
    rawEnv.MEMGATE_LOCAL_DATA = join(dir, "globex.jsonl");
  }
  writeFileSync(
    join(dir, "globex.jsonl"),
    `${(opts.localRecords ?? []).map((r) => JSON.stringify(r)).join("\n")}\n`,
  );

  const logs: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      logs.push(chunk.toString("utf8"));
      cb();
    },
  });
  const logger = createLogger("debug", sink);
  const zep: Record<string, FakeBackend> = {};
  const openmemory: Record<string, FakeBackend> = {};
  const factories: BackendFactories = {
    zep: (cfg) => {
      const tenant = cfg.apiKey.replace("zep-secret-", "");
      zep[tenant] = new FakeBackend("zep");
      return zep[tenant];
    },
    openmemory: (cfg) => {
      const tenant = (cfg.apiKey ?? "").replace("om-secret-", "") || "dev";
      openmemory[tenant] = new FakeBackend("openmemory");
      return openmemory[tenant];
    },
    local: () => createLocalBackendFromRecords(opts.localRecords ?? []),
  };
  const services = await buildServices({
    env: parseEnv(rawEnv),
    rawEnv,
    logger,
    factories: opts.factories ?? factories,
    watchPolicies: opts.watchPolicies ?? false,
  });
  // Build the fake backends now so tests can script them before the first request.
  for (const tenant of services.tenants.tenants()) {
    for (const name of ["zep", "openmemory"] as const) await services.backends.get(tenant, name);
  }
  const app = createApp(services);
  return {
    app,
    services,
    dir,
    zep,
    openmemory,
    logs,
    async close() {
      await services.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
