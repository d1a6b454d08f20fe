import { createServer, type Server } from "node:http";
import { type AddressInfo, connect } from "node:net";
import { gzipSync } from "node:zlib";
import request from "supertest";
import { runPipeline } from "../../src/pipeline";
import { compileRedactor } from "../../src/pipeline/redaction";
import { compilePolicy, compilePolicyText } from "../../src/policy/compile";
import { DETECTORS, redactionSchema } from "../../src/policy/schema";
import { type Harness, KEYS, makeHarness } from "../helpers/harness";
import { makeCandidate, makePolicy } from "../helpers/items";

/**
 * Pathological content through every stage: at the edge (bodies far over the limit, compression bombs), in the
 * pipeline (a 50,000-character sentence, lone surrogates, RTL and zero-width characters), and in policies (a
 * pattern that is catastrophic for a backtracking engine). Correct answers, bounded time, never a 5xx.
 */
const HOSTILE_POLICY = `name: hostile
version: 1
tokenizer: o200k_base
retrieval: { minScore: 0, maxTokens: 3000, clipSentences: 5 }
redaction: { enabled: true, detectors: [${DETECTORS.join(", ")}], patterns: ["(a+)+$"] }
`;
const SENTENCE_50K = `${"word ".repeat(9_999)}end`.padEnd(50_000, "x");
const ODD = [
  "lone \ud800 high and \udc00 low surrogates",
  "\u202eright-to-left override\u202c and \u200f marks",
  "zero\u200bwidth\u200c joiners\u200d and \ufeff BOM",
  "שלום עולם. مرحبا بالعالم. 你好世界。",
  "👩‍👩‍👧‍👦 family emoji 🇵🇹 flags e\u0301 combining",
];
const body = (query: string, patch: Record<string, unknown> = {}) => ({
  userId: "u-123",
  sessionId: "s-9",
  query,
  useMemory: true,
  policy: "hostile",
  ...patch,
});

describe("pathological content", () => {
  let h: Harness;
  let server: Server;
  let port: number;
  beforeAll(async () => {
    h = await makeHarness({
      policies: { hostile: HOSTILE_POLICY },
      env: { MEMGATE_KEY_RATE_LIMIT: "100000/60" },
    });
    server = createServer(h.app).listen(0, "127.0.0.1");
    await new Promise<void>((resolve) => server.once("listening", () => resolve()));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await h.close();
  });
  const post = (payload: object, key: string = KEYS.acmeOps) =>
    request(h.app).post("/v1/retrieve").set("x-api-key", key).send(payload);

  /** Sends headers announcing `length` bytes and a few of them; resolves with the status line that comes back. */
  const announce = (headers: string, length: number) =>
    new Promise<string>((resolve, reject) => {
      const socket = connect(port, "127.0.0.1");
      let data = "";
      socket.on("data", (c: Buffer) => {
        data += c.toString();
      });
      socket.on("close", () => resolve(data.split("\r\n")[0] ?? ""));
      socket.on("error", reject);
      socket.write(
        `POST /v1/retrieve HTTP/1.1\r\nHost: x\r\n${headers}` +
          `Content-Type: application/json\r\nContent-Length: ${length}\r\n\r\n{"userId":`,
      );
    });

  test("a body announced at 100 MB is refused at the edge (413, connection closed) before it is sent", async () => {
    expect(await announce(`X-Api-Key: ${KEYS.acmeChat}\r\n`, 100_000_000)).toBe(
      "HTTP/1.1 413 Payload Too Large",
    );
    // Without a key: 401, and the connection is closed rather than drained.
    expect(await announce("", 100_000_000)).toBe("HTTP/1.1 401 Unauthorized");
  });

  test("2 MB sent (chunked, no length) and a gzip bomb are 413; a corrupt gzip body is 400", async () => {
    const big = await post({ ...body("x"), pad: "x".repeat(2_000_000) });
    expect(big.status).toBe(413);
    expect(big.body.code).toBe("PAYLOAD_TOO_LARGE");
    const chunked = await fetch(`http://127.0.0.1:${port}/v1/retrieve`, {
      method: "POST",
      headers: { "x-api-key": KEYS.acmeChat, "content-type": "application/json" },
      body: new Blob([`{"pad":"${"x".repeat(2_000_000)}"}`]).stream(),
      duplex: "half",
    } as RequestInit);
    expect(chunked.status).toBe(413);
    // 20 MB of spaces gzip to ~20 KB: the limit applies to the inflated bytes.
    const bomb = gzipSync(Buffer.from(`{"userId":"u-123","pad":"${" ".repeat(20_000_000)}"}`));
    expect(bomb.length).toBeLessThan(64 * 1024);
    for (const [payload, status] of [
      [bomb, 413],
      [Buffer.from("not gzip at all"), 400],
    ] as const) {
      const res = await fetch(`http://127.0.0.1:${port}/v1/retrieve`, {
        method: "POST",
        headers: {
          "x-api-key": KEYS.acmeChat,
          "content-type": "application/json",
          "content-encoding": "gzip",
        },
        body: new Uint8Array(payload),
      });
      expect(res.status).toBe(status);
      expect(res.headers.get("content-type")).toMatch(/^application\/problem\+json/);
    }
  });

  test("a 50,000-character sentence goes through every stage within the budget", async () => {
    h.zep.acme?.setUser("u-123", [makeCandidate({ id: "long", content: SENTENCE_50K, score: 0.9 })]);
    const res = await post(body("a long one")).expect(200);
    const [memory] = res.body.memories;
    expect(memory.provenance.originalLength).toBe(50_000);
    expect(memory.content.endsWith("...")).toBe(true);
    expect(res.body.metadata.totalTokens).toBeLessThanOrEqual(3000);
    expect(res.body.metadata.appliedFilters).toEqual([
      "redaction",
      "score_threshold",
      "deduplication",
      "interleave:alternate",
      "clip",
      "token_budget",
    ]);
  });

  test("lone surrogates, RTL and zero-width characters: in memories and in the query", async () => {
    h.zep.acme?.setUser(
      "u-123",
      ODD.map((content, i) => makeCandidate({ id: `odd${i}`, content, score: 0.9 - i / 100 })),
    );
    for (const query of ODD) {
      const res = await post(body(query)).expect(200);
      expect(res.body.memories).toHaveLength(ODD.length);
      expect(() => JSON.parse(res.text)).not.toThrow();
      expect(res.body.systemPrompt.length).toBeGreaterThan(0);
    }
    expect(h.logs.join("")).not.toContain("unhandled error");
  });

  test("the same content through runPipeline directly: deterministic, never splits a surrogate pair", () => {
    const compiled = compilePolicy(
      makePolicy({ retrieval: { minScore: 0, maxTokens: 100 }, tokenizer: "approx" }),
    );
    const candidates = [SENTENCE_50K, ...ODD, "🙂".repeat(5_000)].map((content, i) =>
      makeCandidate({ id: `c${i}`, content, score: 1 - i / 10 }),
    );
    const once = runPipeline({ userId: "u", query: "tea", candidates, backend: "zep" }, compiled);
    const twice = runPipeline({ userId: "u", query: "tea", candidates, backend: "zep" }, compiled);
    expect(twice).toEqual(once);
    expect(once.totalTokens).toBeLessThanOrEqual(100);
    for (const m of once.memories) {
      // A truncation never leaves half of a pair the input did not already have.
      expect(m.content.endsWith("\ud83d")).toBe(false);
    }
  });

  test("(a+)+$ — catastrophic for a backtracking engine — runs in linear time under RE2, correctly", async () => {
    const evil = `${"a".repeat(50_000)}b`;
    h.zep.acme?.setUser("u-123", [
      makeCandidate({ id: "evil", content: evil, score: 0.9 }),
      makeCandidate({ id: "all-a", content: "aaaaaaaa", score: 0.8 }),
    ]);
    const started = Date.now();
    const res = await post(body("evil", { explain: true })).expect(200);
    expect(Date.now() - started).toBeLessThan(5000); // a backtracking engine would need longer than the universe
    const redaction = res.body.trace.find((t: { stage: string }) => t.stage === "redaction");
    // "aaaaaaaa" matched and was redacted; "aaa…ab" ends with b: no match, untouched.
    expect(redaction.changes).toEqual([{ id: "all-a", reason: "redacted:custom_0" }]);
    const allA = res.body.memories.find((m: { id: string }) => m.id === "all-a");
    if (allA !== undefined) expect(allA.content).toBe("[REDACTED]");

    // The same pattern from an admin's request overrides.
    const viaOverrides = await post(
      body("evil", {
        policy: "fast",
        explain: true,
        overrides: { enableRedaction: true, customRedactionPatterns: ["(a+)+$"] },
      }),
    ).expect(200);
    const stage = viaOverrides.body.trace.find((t: { stage: string }) => t.stage === "redaction");
    expect(stage.changes).toEqual([{ id: "all-a", reason: "redacted:custom_0" }]);
  });

  test("a pattern RE2 cannot run (backreference, lookbehind) is refused with the field path", async () => {
    for (const pattern of ["(a)\\1", "(?<=a)b"]) {
      const result = compilePolicyText(
        `name: p\nversion: 1\nredaction:\n  enabled: true\n  patterns: ["${pattern.replaceAll("\\", "\\\\")}"]\n`,
        "p.yaml",
      );
      expect(result.ok).toBe(false);
      if (!result.ok)
        expect(result.problems[0]).toMatchObject({ path: ["redaction", "patterns", 0], line: 5 });
      const res = await post(body("x", { overrides: { customRedactionPatterns: [pattern] } }));
      expect(res.status).toBe(400);
      expect(res.body.detail).toMatch(/^overrides\.customRedactionPatterns\[0\]: /);
    }
  });
});

/** Unpaired UTF-16 surrogates in `s`. */
function loneSurrogates(s: string): number {
  return s.match(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g)?.length ?? 0;
}

/** `unit` repeated to exactly `size` code units. */
const fill = (unit: string, size: number) => unit.repeat(Math.ceil(size / unit.length)).slice(0, size);

/**
 * Every redaction detector at once on content built to hurt it: 1 MB runs of what each pattern starts with
 * (digits, groups, colons, `@`, quotes, `+`, IBAN-like groups, phone words) and lone surrogates. Each pass
 * is linear by construction (detectors.ts); these check it holds on the worst inputs we know.
 */
describe("hostile content through every redaction detector", () => {
  const MB = 1_000_000;
  const all = compileRedactor(redactionSchema.parse({ enabled: true, detectors: [...DETECTORS] }));
  const HOSTILE: Array<[string, string]> = [
    ["a digit run", "7".repeat(MB)],
    ["spaced digits", fill("4 ", MB)],
    ["dashed groups of four", fill("4111-", MB)],
    ["card-shaped groups", fill("4111 1111 1111 1111 ", MB)],
    ["trunk-0 pairs", fill("06 ", MB)],
    ["hex and colons", fill("a:", MB)],
    ["IPv6 addresses back to back", fill("2001:db8:0:0:0:0:0:1 ", MB)],
    ["IBAN-like groups", fill("DE89 3704 ", MB)],
    ["country codes and digits", fill("DE12", MB)],
    ["quoted local parts", fill('"a b"@', MB)],
    ["one quote that never closes", `"${fill("x ", MB)}@x.com`],
    ["a@b. chains", fill("a@b.", MB)],
    ["plus signs and parentheses", fill("+1 (", MB)],
    ["phone words and digits", fill("tel 612 ", MB)],
    ["lone surrogates among PII shapes", fill("\ud800 1\udc00@x.c 4111 \udbff::1 ", MB)],
    ["addresses glued to CJK", fill("用户@例子.中国谢", MB)],
  ];

  test.each(HOSTILE)("%s (1 MB): finishes in bounded time, no surrogate is split", (_name, text) => {
    const started = performance.now();
    const out = all.redact(text);
    expect(performance.now() - started).toBeLessThan(10_000);
    expect(loneSurrogates(out.text)).toBe(loneSurrogates(text));
  });

  test("cost grows linearly: 1 MB takes about 5× what 200 KB takes, not 25×", () => {
    const fastest = (text: string) => {
      let best = Number.POSITIVE_INFINITY;
      for (let i = 0; i < 3; i++) {
        const started = performance.now();
        all.redact(text);
        best = Math.min(best, performance.now() - started);
      }
      return best;
    };
    for (const unit of ["tel 612 ", "4 ", "DE89 3704 ", "2001:db8::1 x@y.zz "]) {
      const small = fastest(fill(unit, MB / 5));
      const large = fastest(fill(unit, MB));
      // 2 ms floor: a 200 KB pass that fast is all noise. Quadratic growth would be 25×.
      expect({ unit, linear: large < 15 * Math.max(small, 2) }).toEqual({ unit, linear: true });
    }
  });

  test("a 1 MB memory through every detector and every stage: the PII in it is redacted", () => {
    const pii = "Mail ana@example.com, IBAN DE89 3704 0044 0532 0130 00, card 4111 1111 1111 1111. ";
    const content = pii + fill("2001:db8::1 +44 20 7946 0958 \ud800 ", MB);
    const compiled = compilePolicy(
      makePolicy({
        retrieval: { minScore: 0, maxTokens: 3000 },
        tokenizer: "approx",
        redaction: { enabled: true, detectors: [...DETECTORS] },
      }),
    );
    const started = performance.now();
    const result = runPipeline(
      {
        userId: "u",
        query: "mail",
        candidates: [makeCandidate({ id: "huge", content, score: 0.9 })],
        backend: "zep",
      },
      compiled,
    );
    expect(performance.now() - started).toBeLessThan(20_000);
    const [memory] = result.memories;
    expect(memory?.provenance.wasRedacted).toBe(true);
    for (const shown of ["ana@example.com", "DE89", "4111", "7946", "2001:db8"]) {
      expect(memory?.content).not.toContain(shown);
    }
    const redaction = result.trace.find((t) => t.stage === "redaction");
    expect(redaction?.changes.map((c) => c.reason)).toEqual(
      expect.arrayContaining(["redacted:email", "redacted:iban", "redacted:credit_card", "redacted:ipv6"]),
    );
    expect(() => JSON.stringify(result)).not.toThrow();
  });

  test("10,000 candidates through every detector: bounded time, deterministic, within the policy's limits", () => {
    const pieces = [
      "call +33 1 23 45 67 89",
      "IBAN GB82 WEST 1234 5698 7654 32",
      "at 12:30:45 see std::io",
      "order 4716000000000007",
      "\udc00 lone",
      "mail o'brien@example.ie",
      "icon@2x.png",
    ];
    const candidates = Array.from({ length: 10_000 }, (_, i) =>
      makeCandidate({
        id: `c${i}`,
        content: `Memory ${i}: ${pieces[i % pieces.length]} and ${pieces[(i * 7) % pieces.length]}.`,
        score: ((i * 7919) % 1000) / 1000,
      }),
    );
    const compiled = compilePolicy(
      makePolicy({
        retrieval: { minScore: 0, maxTokens: 1000, topK: 20 },
        tokenizer: "approx",
        redaction: { enabled: true, detectors: [...DETECTORS] },
      }),
    );
    const started = performance.now();
    const once = runPipeline({ userId: "u", query: "mail", candidates, backend: "zep" }, compiled);
    expect(performance.now() - started).toBeLessThan(20_000);
    expect(once.memories.length).toBeLessThanOrEqual(20);
    expect(once.totalTokens).toBeLessThanOrEqual(1000);
    const redaction = once.trace.find((t) => t.stage === "redaction");
    expect(redaction?.in).toBe(10_000);
    // Every candidate holds a phone number, an IBAN or an address (o'brien@…) among its two pieces, or neither.
    expect(redaction?.changes.length).toBeGreaterThan(5000);
    for (const m of once.memories) {
      expect(m.content).not.toMatch(/o'brien@|GB82|\+33 1/);
      expect(loneSurrogates(m.content)).toBeLessThanOrEqual(1);
    }
    expect(runPipeline({ userId: "u", query: "mail", candidates, backend: "zep" }, compiled)).toEqual(once);
  });
});
