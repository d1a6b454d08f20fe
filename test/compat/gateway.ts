/**
 * A real gateway for the SDK-driven compat tests: the production wiring with the real backend adapters
 * (BACKEND_FACTORIES), listening on 127.0.0.1 and an ephemeral port, so the Zep and OpenMemory SDKs talk
 * to it over HTTP exactly as they would in production.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { BACKEND_FACTORIES } from "../../src/server/services";
import { hashKey } from "../../src/tenants/keys";
import { type Harness, makeHarness } from "../helpers/harness";

export const KEYS = {
  /** retrieve + proxy */
  app: "mg_test_compat_app_0123456789",
  /** retrieve only */
  reader: "mg_test_compat_reader_0123456789",
  /** proxy only */
  writer: "mg_test_compat_writer_0123456789",
} as const;

/** Redaction on, every score kept, a tight budget measured with the approx tokenizer (ceil(chars / 4)). */
export const COMPAT_POLICY =
  "name: compat\nversion: 1\ntokenizer: approx\n" +
  "retrieval: { minScore: 0, maxTokens: 100, clipSentences: 2 }\n" +
  "redaction: { enabled: true, detectors: [email, credit_card, phone] }\n";

/** `backends:` lines of the tenant (indented for the tenants file). */
export function tenantsYaml(backends: string): string {
  return `tenants:
  - id: t
    keys:
      - { name: app, sha256: ${hashKey(KEYS.app)}, scopes: [retrieve, proxy] }
      - { name: reader, sha256: ${hashKey(KEYS.reader)}, scopes: [retrieve] }
      - { name: writer, sha256: ${hashKey(KEYS.writer)}, scopes: [proxy] }
    policies: { allowed: ["*"], default: compat }
    backends:
${backends}
`;
}

export interface Gateway {
  h: Harness;
  server: Server;
  /** e.g. http://127.0.0.1:41234 */
  origin: string;
  close(): Promise<void>;
}

export async function startGateway(opts: {
  backends: string;
  env?: Record<string, string>;
  localRecords?: unknown[];
  /** More policy files (name → YAML) beside `compat`. */
  policies?: Record<string, string>;
}): Promise<Gateway> {
  const h = await makeHarness({
    policies: { compat: COMPAT_POLICY, ...opts.policies },
    factories: BACKEND_FACTORIES,
    tenants: tenantsYaml(opts.backends),
    ...(opts.env === undefined ? {} : { env: opts.env }),
    ...(opts.localRecords === undefined ? {} : { localRecords: opts.localRecords }),
  });
  const server = await new Promise<Server>((resolve, reject) => {
    const s = createServer(h.app).listen(0, "127.0.0.1", (err?: Error) => (err ? reject(err) : resolve(s)));
  });
  const { port } = server.address() as AddressInfo;
  return {
    h,
    server,
    origin: `http://127.0.0.1:${port}`,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await h.close();
    },
  };
}

/** Tokens as the `approx` tokenizer counts them (the compat policy's budget unit). */
export function approxTokens(texts: readonly string[]): number {
  return texts.reduce((sum, t) => sum + Math.ceil(t.length / 4), 0);
}
