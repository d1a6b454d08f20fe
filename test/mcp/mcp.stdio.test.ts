/**
 * `memgate mcp --stdio <gateway URL>`, spawned as a desktop client would (`node bin/memgate.js`, built dist/),
 * driven by the MCP SDK's own StdioClientTransport: the same flow as over HTTP, forwarded to the gateway's /mcp
 * with the key from MEMGATE_API_KEY. Needs `npm run build`.
 */
import { join } from "node:path";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { COMPAT_POLICY, type Gateway, KEYS, startGateway } from "../compat/gateway";
import { call, connect, type IndexLineView } from "./client";
import { EMAIL, RECORDS } from "./fixtures";

const BIN = join(__dirname, "../../bin/memgate.js");

function stdioTransport(origin: string, key: string | undefined): StdioClientTransport {
  const env: Record<string, string> = { PATH: process.env.PATH ?? "" };
  if (key !== undefined) env.MEMGATE_API_KEY = key;
  return new StdioClientTransport({
    command: process.execPath,
    args: [BIN, "mcp", "--stdio", origin],
    env,
    stderr: "pipe",
  });
}

const stdioClient = (origin: string, key: string | undefined) => connect(stdioTransport(origin, key));

describe("memgate mcp --stdio", () => {
  let gw: Gateway;
  let client: Client | undefined;

  beforeEach(async () => {
    gw = await startGateway({
      backends: "      local: { dataFile: globex.jsonl }",
      localRecords: RECORDS,
      policies: { compat: `${COMPAT_POLICY}rateLimit: { perUser: { points: 4, durationSeconds: 60 } }\n` },
    });
  });
  afterEach(async () => {
    await client?.close();
    client = undefined;
    await gw.close();
  });

  test("lists the tools; index → timeline → details, redacted; cache hit; a fallback as isError", async () => {
    client = await stdioClient(gw.origin, KEYS.app);
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(["get_details", "get_timeline", "search_memory"]);

    const args = { userId: "ana", query: "When is the Lisbon trip?" };
    const search = await call(client, "search_memory", args);
    expect(search.isError).toBe(false);
    expect((search.body.index as IndexLineView[]).map((l) => l.id)).toContain("t3");
    const again = await call(client, "search_memory", args);
    expect((again.body.metadata as { cache: string }).cache).toBe("hit");

    const timeline = await call(client, "get_timeline", { userId: "ana", id: "t3", window: 1 });
    expect((timeline.body.index as IndexLineView[]).map((l) => l.id)).toEqual(["t2", "t3", "t4"]);

    const details = await call(client, "get_details", { userId: "ana", ids: ["t3"] });
    const [memory] = details.body.memories as Array<{ content: string }>;
    expect(memory?.content).toContain("[REDACTED]");
    expect(JSON.stringify([search, timeline, details])).not.toContain(EMAIL);

    // Four calls a minute are allowed: the fifth: the user's limit is the core's fallback.
    const limited = await call(client, "get_details", { userId: "ana", ids: ["t1"] });
    expect(limited.isError).toBe(true);
    expect(limited.texts[0]).toMatch(/^FALLBACK RATE_LIMITED/);
  });

  test("a wrong key: the gateway's 401 ends the proxy with a reason on stderr", async () => {
    const transport = stdioTransport(gw.origin, "mg_wrong_key_0123456789");
    let stderr = "";
    transport.stderr?.on("data", (chunk: Buffer) => {
      stderr += chunk.toString("utf8");
    });
    await expect(connect(transport)).rejects.toThrow();
    expect(stderr).toMatch(/memgate mcp: cannot reach http:\/\/127\.0\.0\.1:\d+\/mcp: .*401/);
  });
});
