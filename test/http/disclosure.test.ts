/**
 * Progressive disclosure on /v1 (docs/api.md#progressive-disclosure): `detail: "index"` on /v1/retrieve (the
 * default answer unchanged, byte for byte), POST /v1/memories/details and POST /v1/memories/timeline, with
 * /v1/retrieve's key, scope, tenant and body rules.
 */
import request from "supertest";
import { type Harness, KEYS, makeHarness, tenantsYaml } from "../helpers/harness";

const EMAIL = "ana.lopez@example.com";
const turn = (id: string, minute: number, content: string, extra: Record<string, unknown> = {}) => ({
  id,
  userId: "ana",
  content,
  type: "message",
  role: minute % 2 === 0 ? "user" : "assistant",
  timestamp: `2026-03-01T09:${String(minute).padStart(2, "0")}:00Z`,
  sessionId: "s-1",
  ...extra,
});
const RECORDS = [
  turn("t1", 0, "Good morning! I am planning a trip."),
  turn("t2", 1, "Sure, where would you like to go?"),
  turn("t3", 2, `I want to visit Lisbon in May. My email is ${EMAIL}. I also like long walks by the river.`),
  turn("t4", 3, "Lisbon in May is lovely."),
  turn("t5", 4, "Book a fado restaurant too."),
  turn("b1", 0, "Bob goes to Lisbon in June.", { userId: "bob", sessionId: "s-b" }),
];
const REDACTING =
  "name: redacting\nversion: 1\nredaction: { enabled: true, detectors: [email] }\nretrieval: { minScore: 0 }\n";
const retrieveBody = (patch: Record<string, unknown> = {}) => ({
  userId: "ana",
  sessionId: "s-1",
  query: "When do I visit Lisbon?",
  useMemory: true,
  ...patch,
});

describe("progressive disclosure on /v1", () => {
  let h: Harness;
  const post = (path: string, body: unknown, key: string = KEYS.globex) =>
    request(h.app)
      .post(path)
      .set("authorization", `Bearer ${key}`)
      .send(body as object);

  beforeEach(async () => {
    h = await makeHarness({
      localRecords: RECORDS,
      policies: { redacting: REDACTING },
      // globex (local + zep) may also use the redacting policy.
      tenants: tenantsYaml().replace("allowed: [default], default", "allowed: [default, redacting], default"),
    });
  });
  afterEach(() => h.close());

  test("without `detail` (or with `full`) /v1/retrieve answers byte for byte as before", async () => {
    const plain = await post("/v1/retrieve", retrieveBody({ query: "Lisbon walks" })).expect(200);
    const full = await post("/v1/retrieve", retrieveBody({ query: "Lisbon walks", detail: "full" })).expect(
      200,
    );
    const strip = (text: string) => text.replace(/"queryTime":[0-9.]+/, "").replace(/"cache":"\w+"/, "");
    expect(strip(full.text)).toBe(strip(plain.text));
    expect(plain.body).not.toHaveProperty("index");
    expect(Object.keys(plain.body)).toEqual(["memories", "metadata", "systemPrompt"]);
  });

  test("detail: index — one line per kept memory (gist, citation), the index as the prompt, cheaper", async () => {
    const full = await post("/v1/retrieve", retrieveBody()).expect(200);
    const res = await post("/v1/retrieve", retrieveBody({ detail: "index" })).expect(200);
    expect(Object.keys(res.body)).toEqual(["index", "metadata", "systemPrompt"]);
    expect(res.body.metadata.cache).toBe("hit"); // the same cached retrieval, another view
    expect(res.body.index.map((l: { id: string }) => l.id)).toEqual(
      full.body.memories.map((m: { id: string }) => m.id),
    );
    const t3 = res.body.index.find((l: { id: string }) => l.id === "t3");
    expect(t3).toEqual({
      id: "t3",
      gist: "I want to visit Lisbon in May.",
      type: "message",
      role: "user",
      timestamp: "2026-03-01T09:02:00.000Z",
      score: expect.any(Number),
      citation: { id: "t3", backend: "local", sessionId: "s-1", timestamp: "2026-03-01T09:02:00.000Z" },
    });
    expect(res.body.systemPrompt).toContain(
      "- [t3] 2026-03-01T09:02:00Z message/user: I want to visit Lisbon in May.",
    );
    expect(res.body.metadata.indexTokens).toBeLessThan(full.body.metadata.totalTokens);
    expect(res.body.metadata.sufficiency).toMatchObject({ verdict: expect.any(String) });
  });

  test("details: the user's memories whole, in the order asked, redacted by the policy; others absent", async () => {
    const res = await post("/v1/memories/details", {
      userId: "ana",
      ids: ["t3", "b1", "nope", "t1"],
      policy: "redacting",
    }).expect(200);
    expect(res.body.memories.map((m: { id: string }) => m.id)).toEqual(["t3", "t1"]);
    expect(res.body.memories[0].content).toBe(
      "I want to visit Lisbon in May. My email is [REDACTED]. I also like long walks by the river.",
    );
    expect(res.body.metadata).toMatchObject({
      backend: "local",
      cache: "bypass",
      fallback: null,
      policy: { name: "redacting" },
    });
    expect(res.body.systemPrompt).toContain("[REDACTED]");
    expect(res.text).not.toContain(EMAIL);
  });

  test("timeline: the turns around a memory in session order, as index lines", async () => {
    const res = await post("/v1/memories/timeline", { userId: "ana", id: "t3", window: 2 }).expect(200);
    expect(res.body.index.map((l: { id: string; relation: string }) => [l.id, l.relation])).toEqual([
      ["t1", "before"],
      ["t2", "before"],
      ["t3", "self"],
      ["t4", "after"],
      ["t5", "after"],
    ]);
    const narrow = await post("/v1/memories/timeline", { userId: "ana", id: "t1" }).expect(200);
    expect(narrow.body.index.map((l: { id: string }) => l.id)).toEqual(["t1", "t2", "t3", "t4"]);
  });

  test("another user's id and an unknown id get the same 404 from timeline", async () => {
    const theirs = await post("/v1/memories/timeline", { userId: "ana", id: "b1" }).expect(404);
    const unknown = await post("/v1/memories/timeline", { userId: "ana", id: "zzz" }).expect(404);
    expect(theirs.body.detail).toBe(unknown.body.detail);
    expect(theirs.body.code).toBe("NOT_FOUND");
  });

  test("400 naming the field", async () => {
    const cases: Array<[string, unknown, RegExp]> = [
      ["/v1/memories/details", { userId: "ana", ids: [] }, /^ids: /],
      [
        "/v1/memories/details",
        { userId: "ana", ids: Array.from({ length: 21 }, (_, i) => `m${i}`) },
        /^ids: at most 20/,
      ],
      ["/v1/memories/details", { ids: ["t1"] }, /^userId: /],
      ["/v1/memories/timeline", { userId: "ana", id: "t1", window: 11 }, /^window: /],
      ["/v1/memories/timeline", { userId: "ana", id: "t1", extra: 1 }, /extra: unknown field/],
      ["/v1/retrieve", retrieveBody({ detail: "summary" }), /^detail: /],
    ];
    for (const [path, body, detail] of cases) {
      const res = await post(path, body).expect(400);
      expect(res.body.detail).toMatch(detail);
    }
  });

  test("keys, scopes and tenants as on /v1/retrieve", async () => {
    await request(h.app)
      .post("/v1/memories/details")
      .send({ userId: "ana", ids: ["t1"] })
      .expect(401);
    // acme's keys reach acme's backends only: a backend acme has not is 403, a policy globex may not use is 403.
    await post(
      "/v1/memories/details",
      { userId: "ana", ids: ["t1"], backend: "local" },
      KEYS.acmeChat,
    ).expect(403);
    await post("/v1/memories/timeline", { userId: "ana", id: "t1", policy: "fast" }).expect(403);
  });

  test("a backend without the capability answers its declared fallback in a 200", async () => {
    // acme's Zep here is a scripted fake without getMemories/neighbours.
    const res = await post("/v1/memories/details", { userId: "ana", ids: ["t1"] }, KEYS.acmeChat).expect(200);
    expect(res.body.memories).toEqual([]);
    expect(res.body.metadata.fallback).toMatchObject({ code: "ZEP_UNAVAILABLE", action: "skip" });
    expect(res.body.metadata.fallback.message).toMatch(/cannot look memories up by id/);
  });
});
