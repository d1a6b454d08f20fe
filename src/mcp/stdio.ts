/**
 * `memgate mcp --stdio <gateway URL>`: an MCP server on stdin/stdout for desktop clients that only speak stdio,
 * forwarding every tool listing and call to the gateway's `/mcp` (Streamable HTTP) with the key from
 * `MEMGATE_API_KEY`. A thin proxy on the SDK's own client and stdio server transport: the gateway does all the
 * work (auth, policy, redaction, limits, cache, fallbacks). Nothing but MCP messages is written to stdout;
 * diagnostics go to stderr.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { EXIT_FAILURE, EXIT_INVALID, EXIT_OK } from "../cli/io";
import { MCP_PATH } from "./route";

export const API_KEY_ENV = "MEMGATE_API_KEY";

/** The gateway's /mcp endpoint from what the user gave: `http://host:8787` or `http://host:8787/mcp`. */
export function mcpEndpoint(gateway: string): URL | undefined {
  let url: URL;
  try {
    url = new URL(gateway);
  } catch {
    return undefined;
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return undefined;
  if (!url.pathname.replace(/\/+$/, "").endsWith(MCP_PATH)) {
    url.pathname = `${url.pathname.replace(/\/+$/, "")}${MCP_PATH}`;
  }
  return url;
}

export async function stdioProxyCommand(
  gateway: string,
  err: (line: string) => void,
  env: NodeJS.ProcessEnv = process.env,
): Promise<number> {
  const endpoint = mcpEndpoint(gateway);
  if (endpoint === undefined) {
    err(`memgate mcp: not an http(s) URL: ${gateway}`);
    return EXIT_INVALID;
  }
  const key = env[API_KEY_ENV];
  const headers: Record<string, string> = key ? { authorization: `Bearer ${key}` } : {};
  const upstream = new Client({ name: "memgate-stdio", version: "0.1.0" });
  try {
    await upstream.connect(new StreamableHTTPClientTransport(endpoint, { requestInit: { headers } }));
  } catch (cause) {
    err(
      `memgate mcp: cannot reach ${endpoint.href}: ${cause instanceof Error ? cause.message : String(cause)}`,
    );
    return EXIT_FAILURE;
  }
  const server = new Server({ name: "memgate", version: "0.1.0" }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, (req) => upstream.listTools(req.params));
  server.setRequestHandler(CallToolRequestSchema, async (req) => {
    try {
      return await upstream.callTool(req.params);
    } catch (cause) {
      // The gateway gone mid-session: a tool result that says so, not a protocol error.
      const reason = cause instanceof Error ? cause.message : String(cause);
      return { isError: true, content: [{ type: "text", text: `GATEWAY_UNREACHABLE: ${reason}` }] };
    }
  });
  const transport = new StdioServerTransport();
  const closed = new Promise<void>((resolve) => {
    server.onclose = () => resolve();
    process.stdin.once("end", () => resolve());
  });
  await server.connect(transport);
  await closed;
  await server.close().catch(() => undefined);
  await upstream.close().catch(() => undefined);
  return EXIT_OK;
}
