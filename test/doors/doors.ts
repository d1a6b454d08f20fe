/**
 * The three doors of the common suite, each driven the way its users drive it: `/v1/retrieve` over HTTP, the Zep
 * search route through the real `@getzep/zep-cloud` client, the OpenMemory query route through the real
 * `openmemory-js` client. Each answer is reduced to what every door can show: the memories' texts, the cache
 * status and the fallback code (metadata on /v1, the `x-memgate-cache` / `x-memgate-fallback` headers on the
 * drop-in routes).
 */
import { ZepClient } from "@getzep/zep-cloud";
import OpenMemory from "openmemory-js";
import type { Wire } from "../helpers/fake-upstreams";

export interface DoorAnswer {
  texts: string[];
  cache: string | null;
  /** The fallback code, or null when none applied. */
  fallback: string | null;
  /** `skip` / `empty` / `cache` for a fallback. */
  action: string | null;
}

export interface Door {
  name: string;
  /** The upstream wire this door's searches reach. */
  wire: Wire;
  ask(origin: string, apiKey: string, userId: string, query: string): Promise<DoorAnswer>;
}

function fromHeaders(headers: Headers, texts: string[]): DoorAnswer {
  const fallback = headers.get("x-memgate-fallback");
  const m = fallback === null ? null : /^([A-Z_]+); action=(\w+)$/.exec(fallback);
  return { texts, cache: headers.get("x-memgate-cache"), fallback: m?.[1] ?? null, action: m?.[2] ?? null };
}

export const V1: Door = {
  name: "/v1/retrieve",
  wire: "zep",
  async ask(origin, apiKey, userId, query) {
    const res = await fetch(`${origin}/v1/retrieve`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": apiKey },
      body: JSON.stringify({ userId, sessionId: "s-1", query, useMemory: true, backend: "zep" }),
    });
    if (res.status !== 200) throw new Error(`/v1/retrieve answered ${res.status}: ${await res.text()}`);
    const body = (await res.json()) as {
      memories: Array<{ content: string }>;
      metadata: { cache: string; fallback: { code: string; action: string } | null };
    };
    return {
      texts: body.memories.map((m) => m.content),
      cache: body.metadata.cache,
      fallback: body.metadata.fallback?.code ?? null,
      action: body.metadata.fallback?.action ?? null,
    };
  },
};

export const ZEP: Door = {
  name: "Zep graph.search (@getzep/zep-cloud)",
  wire: "zep",
  async ask(origin, apiKey, userId, query) {
    const client = new ZepClient({ apiKey, baseUrl: `${origin}/api/v2` });
    // The SDK throws on any non-2xx: a 5xx from the gateway fails the test.
    const { data, rawResponse } = await client.graph
      .search({ userId, query, scope: "edges", limit: 5 }, { maxRetries: 0, timeoutInSeconds: 10 })
      .withRawResponse();
    return fromHeaders(
      rawResponse.headers,
      (data.edges ?? []).map((e) => e.fact),
    );
  },
};

export const OPENMEMORY: Door = {
  name: "OpenMemory query (openmemory-js)",
  wire: "openmemory",
  async ask(origin, apiKey, userId, query) {
    // openmemory-js calls the global fetch and returns only the parsed body: the answer's headers are read by
    // wrapping fetch around the SDK's own call (the request is still the SDK's).
    const original = globalThis.fetch;
    let headers: Headers | undefined;
    globalThis.fetch = async (input, init) => {
      const res = await original(input, init);
      if (String(input).startsWith(origin)) headers = res.headers;
      return res;
    };
    try {
      const answer = await new OpenMemory({ baseUrl: origin, apiKey }).query(query, {
        k: 5,
        filters: { user_id: userId },
      });
      if (headers === undefined) throw new Error("no answer from the gateway");
      return fromHeaders(
        headers,
        answer.matches.map((m) => m.content),
      );
    } finally {
      globalThis.fetch = original;
    }
  },
};

export const DOORS: readonly Door[] = [V1, ZEP, OPENMEMORY];
