/**
 * Upstream answers are read with a bound (src/backends/body.ts): an upstream that sends bytes without end —
 * misbehaving or hostile — costs at most MAX_UPSTREAM_BODY_BYTES of memory, and the call fails as the
 * backend's "unavailable" (so the policy's fallback answers), on the Zep and OpenMemory adapters and on the
 * drop-in doors' own (native) searches alike.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { MAX_UPSTREAM_BODY_BYTES } from "../../src/backends/body";
import { createOpenMemoryBackend } from "../../src/backends/openmemory";
import { BackendError } from "../../src/backends/types";
import { createZepBackend } from "../../src/backends/zep";
import { instrumentBackend } from "../../src/telemetry/backend";
import { makePolicy } from "../helpers/items";
import { total } from "../telemetry/points";
import { installTelemetry } from "../telemetry/setup";

/** Stops by itself after this much, so a reader without a bound cannot run the test forever. */
const SAFETY_STOP = 256 * 1024 * 1024;
const CHUNK = Buffer.alloc(64 * 1024, 0x61); // "aaaa…": never valid JSON

describe("an upstream answer without end", () => {
  let server: Server;
  let origin: string;
  /** Bytes the upstream managed to write per request, known when its connection closed. */
  let sent: number[];

  beforeAll(async () => {
    server = createServer((req, res) => {
      req.resume();
      res.writeHead(200, { "content-type": "application/json" });
      let written = 0;
      const pump = () => {
        while (written < SAFETY_STOP && !res.destroyed) {
          written += CHUNK.length;
          if (!res.write(CHUNK)) return; // wait for 'drain'
        }
        if (!res.destroyed) res.end();
      };
      res.on("drain", pump);
      res.on("close", () => sent.push(written));
      pump();
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  beforeEach(() => {
    sent = [];
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const request = () => ({
    userId: "u-1",
    query: "anything",
    limit: 10,
    searchType: "hybrid" as const,
    policy: makePolicy(),
    signal: AbortSignal.timeout(20_000),
  });
  /** The upstream was cut off soon after the bound, not at its own safety stop. */
  async function expectCutOff(): Promise<void> {
    for (let i = 0; i < 50 && sent.length === 0; i++) await new Promise((r) => setTimeout(r, 20));
    expect(sent.length).toBeGreaterThan(0);
    for (const bytes of sent) expect(bytes).toBeLessThan(4 * MAX_UPSTREAM_BODY_BYTES);
  }

  test("Zep adapter: unavailable, and the read stops at the bound", async () => {
    const zep = createZepBackend({ apiKey: "k", baseUrl: `${origin}/api/v2` });
    const rssBefore = process.memoryUsage().rss;
    const err = await zep.search(request()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BackendError);
    expect((err as BackendError).kind).toBe("unavailable");
    await expectCutOff();
    expect(process.memoryUsage().rss - rssBefore).toBeLessThan(200 * 1024 * 1024);
  });

  test("OpenMemory adapter: unavailable, and the read stops at the bound", async () => {
    const om = createOpenMemoryBackend({ baseUrl: origin, apiKey: "k", userScoping: "user_id" });
    try {
      const err = await om.search(request()).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(BackendError);
      expect((err as BackendError).kind).toBe("unavailable");
      expect((err as BackendError).message).toContain(`over ${MAX_UPSTREAM_BODY_BYTES} bytes`);
      await expectCutOff();
    } finally {
      await om.close?.();
    }
  });

  test("an oversized answer is counted: memgate_upstream_oversized_total{backend}", async () => {
    const telemetry = installTelemetry();
    try {
      const zep = instrumentBackend(createZepBackend({ apiKey: "k", baseUrl: `${origin}/api/v2` }));
      await zep.search(request()).catch(() => undefined);
      await expectCutOff();
      const rm = await telemetry.metrics();
      expect(total(rm, "upstream.oversized", { backend: "zep" })).toBe(1);
    } finally {
      await telemetry.close();
    }
  });

  test("Zep door's native search: unavailable, and the read stops at the bound", async () => {
    const zep = createZepBackend({ apiKey: "k", baseUrl: `${origin}/api/v2` });
    const err = await zep
      .searchNative?.({
        native: { kind: "zep.graph.search", body: { user_id: "u-1", query: "q" }, setLimit: true },
        limit: 10,
        policy: makePolicy(),
        signal: AbortSignal.timeout(20_000),
      })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BackendError);
    expect((err as BackendError).kind).toBe("unavailable");
    expect((err as BackendError).message).toContain("answer too large");
    await expectCutOff();
  });

  test("OpenMemory door's native search: unavailable, and the read stops at the bound", async () => {
    const om = createOpenMemoryBackend({ baseUrl: origin, apiKey: "k", userScoping: "user_id" });
    try {
      const err = await om
        .searchNative?.({
          native: { kind: "openmemory.query", body: { query: "q" }, userId: undefined, extras: {} },
          limit: 10,
          policy: makePolicy(),
          signal: AbortSignal.timeout(20_000),
        })
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(BackendError);
      expect((err as BackendError).kind).toBe("unavailable");
      await expectCutOff();
    } finally {
      await om.close?.();
    }
  });
});
