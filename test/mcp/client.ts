/**
 * The MCP SDK's own client against a running gateway (Streamable HTTP at /mcp, or `memgate mcp --stdio`), and
 * the tool results read back as the agent reads them.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";

export interface ToolAnswer {
  isError: boolean;
  texts: string[];
  /** The JSON answer (the result's structured content). */
  body: Record<string, unknown>;
}

export async function connect(transport: Transport): Promise<Client> {
  const client = new Client({ name: "memgate-test", version: "1.0.0" });
  await client.connect(transport);
  return client;
}

export function httpClient(origin: string, key: string): Promise<Client> {
  return connect(
    new StreamableHTTPClientTransport(new URL(`${origin}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${key}` } },
    }),
  );
}

export async function call(client: Client, name: string, args: Record<string, unknown>): Promise<ToolAnswer> {
  const result = await client.callTool({ name, arguments: args });
  const content = (result.content ?? []) as Array<{ type: string; text?: string }>;
  return {
    isError: result.isError === true,
    texts: content.filter((c) => c.type === "text").map((c) => c.text ?? ""),
    body: (result.structuredContent ?? {}) as Record<string, unknown>,
  };
}

export interface IndexLineView {
  id: string;
  gist: string;
  type: string;
  relation?: string;
  citation: { id: string; backend: string; sessionId: string; timestamp: string; messageId?: string };
}
