/**
 * The MCP tools (seed 004's three layers; docs/api.md#agents-mcp): `search_memory` (layer 1, the index and the
 * sufficiency certificate), `get_timeline` (layer 2) and `get_details` (layer 3). A door only: each tool call is
 * one call of the retrieval core (src/retrieval/service.ts) with the caller's principal and `door: "mcp"`, and its
 * outcome rendered as a tool result. Input schemas are the HTTP API's zod schemas (src/retrieval/request.ts).
 *
 * A fallback (a failing backend, the user's rate limit, …) is a tool result with `isError: true` whose text
 * starts with the fallback code; a refusal (a policy or backend the tenant may not use, an id that is not the
 * user's) likewise with its code. Never a protocol error.
 */
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { INTENTS } from "../pipeline/query/analyze";
import { DEFAULT_TIMELINE_WINDOW } from "../retrieval/disclosure";
import type { RetrievalOutcome } from "../retrieval/outcome";
import { detailsBodySchema, retrieveBodySchema, timelineBodySchema } from "../retrieval/request";
import type { RetrievalService } from "../retrieval/service";
import type { Principal } from "../tenants/types";

export const MCP_DOOR = "mcp";

/** `search_memory`: /v1/retrieve's `userId` and `query` (required here), an intent, a result count. */
export const searchMemoryInput = retrieveBodySchema.pick({ userId: true }).extend({
  query: z.string().min(1, "must not be empty").max(65_536),
  intent: z
    .enum(INTENTS)
    .optional()
    .describe("How to read the question (default: detected from it): ranks memories for that intent"),
  limit: z
    .number()
    .int()
    .min(1)
    .max(20)
    .optional()
    .describe("At most this many memories (default: the policy's topK)"),
});
/** `get_timeline`: /v1/memories/timeline's fields without `policy`/`backend` (the tenant's defaults). */
export const getTimelineInput = timelineBodySchema.pick({ userId: true, id: true, window: true });
/** `get_details`: /v1/memories/details's fields without `policy`/`backend`. */
export const getDetailsInput = detailsBodySchema.pick({ userId: true, ids: true });

export const TOOL_DESCRIPTIONS = {
  search_memory:
    "Search the user's long-term memory. Returns an index: per memory its id, a one-sentence gist, type, time, " +
    "score and citation, plus a sufficiency certificate (completeness, missing terms). Cheap: read this first, " +
    "then call get_details for the ids you need, or get_timeline for what was said around one.",
  get_timeline:
    "The turns before and after one memory (by id from search_memory) in its conversation, as index lines. " +
    `window: turns on each side (default ${DEFAULT_TIMELINE_WINDOW}).`,
  get_details:
    "The full content of some memories by id (from search_memory or get_timeline), redacted by policy and " +
    "within the token budget. Ids that are not this user's are left out.",
} as const;

/** A fresh server with the three tools for one caller (stateless: one per HTTP request). */
export function memoryToolServer(retrieval: RetrievalService, principal: Principal): McpServer {
  const server = new McpServer({ name: "memgate", version: "0.1.0" }, { capabilities: { tools: {} } });
  server.registerTool(
    "search_memory",
    {
      title: "Search memory (index)",
      description: TOOL_DESCRIPTIONS.search_memory,
      inputSchema: searchMemoryInput,
    },
    async (args, extra) => {
      const outcome = await retrieval.retrieve({
        principal,
        userId: args.userId,
        query: args.query,
        ...(args.intent === undefined ? {} : { intent: args.intent }),
        ...(args.limit === undefined ? {} : { topK: args.limit }),
        detail: "index",
        door: MCP_DOOR,
        signal: extra.signal,
      });
      return toolResult(outcome, (o) => {
        const index = o.index;
        if (index === undefined) return o.payload;
        return { ...index, sufficiency: index.metadata.sufficiency ?? null };
      });
    },
  );
  server.registerTool(
    "get_timeline",
    {
      title: "Timeline around a memory",
      description: TOOL_DESCRIPTIONS.get_timeline,
      inputSchema: getTimelineInput,
    },
    async (args, extra) => {
      const window = args.window ?? DEFAULT_TIMELINE_WINDOW;
      const outcome = await retrieval.timeline({
        principal,
        userId: args.userId,
        id: args.id,
        before: window,
        after: window,
        door: MCP_DOOR,
        signal: extra.signal,
      });
      return toolResult(outcome, (o) => o.index ?? { index: [], metadata: o.payload.metadata });
    },
  );
  server.registerTool(
    "get_details",
    { title: "Memory details", description: TOOL_DESCRIPTIONS.get_details, inputSchema: getDetailsInput },
    async (args, extra) => {
      const outcome = await retrieval.details({
        principal,
        userId: args.userId,
        ids: args.ids,
        door: MCP_DOOR,
        signal: extra.signal,
      });
      return toolResult(outcome, (o) => ({ memories: o.payload.memories, metadata: o.payload.metadata }));
    },
  );
  return server;
}

type Answered = Extract<RetrievalOutcome, { kind: "payload" | "fallback" }>;

/**
 * An outcome as a tool result: the rendered answer as JSON text and structured content. A fallback is an error
 * result (`isError`, text `FALLBACK <code> (<action>): <message>` first), except a `cache` fallback that served
 * memories; a refusal is an error result with its code.
 */
function toolResult(outcome: RetrievalOutcome, render: (o: Answered) => object): CallToolResult {
  if (outcome.kind === "refused") {
    return {
      isError: true,
      content: [{ type: "text", text: `${outcome.code}: ${outcome.detail}` }],
      structuredContent: { error: { code: outcome.code, detail: outcome.detail } },
    };
  }
  if (outcome.kind === "rejected") {
    return {
      isError: true,
      content: [
        {
          type: "text",
          text: `INVALID_QUERY: the backend refused the request (HTTP ${outcome.response.status})`,
        },
      ],
    };
  }
  const body = render(outcome) as Record<string, unknown>;
  const fallback = outcome.payload.metadata.fallback;
  const served = fallback?.action === "cache" && outcome.payload.memories.length > 0;
  const content: CallToolResult["content"] = [];
  if (fallback !== null && !served) {
    content.push({
      type: "text",
      text: `FALLBACK ${fallback.code} (${fallback.action}): ${fallback.message}`,
    });
  }
  content.push({ type: "text", text: JSON.stringify(body) });
  return {
    ...(fallback !== null && !served ? { isError: true } : {}),
    content,
    structuredContent: body,
  };
}
