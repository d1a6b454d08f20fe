/**
 * The OpenAPI document (src/http/openapi): it validates as OpenAPI 3.1 with a real validator, docs/openapi.json is
 * what the generator writes now, /openapi.json serves it, and real answers of the gateway validate against the
 * schemas it documents for them. That every served route is documented: ./openapi.routes.test.ts.
 */
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import Ajv2020 from "ajv/dist/2020";
import addFormats from "ajv-formats";
import request from "supertest";
import { buildOpenApiDocument, openApiText } from "../../src/http/openapi/document";
import { problemSchema } from "../../src/http/openapi/schemas";
import { retrievalPayloadSchema } from "../../src/retrieval/payload-schema";
import { type Harness, KEYS, makeHarness } from "../helpers/harness";
import { makeCandidate } from "../helpers/items";

const ROOT = join(__dirname, "../..");

type Doc = Record<string, unknown>;

/**
 * @seriousme/openapi-schema-validator (OpenAPI 3.0/3.1, on ajv and the specification's own JSON Schemas) is an
 * ES module, which Jest's CommonJS runtime cannot load: it runs in a child Node on the document.
 */
function validateOpenApi(doc: unknown): { valid: boolean; version?: string; errors?: unknown; refs: string } {
  const script = `
    import { Validator } from "@seriousme/openapi-schema-validator";
    let text = "";
    for await (const chunk of process.stdin) text += chunk;
    const validator = new Validator();
    const result = await validator.validate(JSON.parse(text));
    let refs = "resolved";
    if (result.valid) {
      try { validator.resolveRefs(); } catch (err) { refs = String(err.message); }
    }
    process.stdout.write(JSON.stringify({ ...result, version: validator.version, refs }));
  `;
  const run = spawnSync(process.execPath, ["--input-type=module", "-e", script], {
    cwd: ROOT,
    input: JSON.stringify(doc),
    encoding: "utf8",
  });
  if (run.status !== 0) throw new Error(`the validator did not run: ${run.stderr}`);
  return JSON.parse(run.stdout);
}

describe("the OpenAPI document", () => {
  const doc = buildOpenApiDocument() as unknown as Doc;

  test("validates as OpenAPI 3.1, every $ref resolving", () => {
    expect(validateOpenApi(doc)).toEqual({ valid: true, version: "3.1", refs: "resolved" });
  });

  test("the validator rejects a broken document (this test can fail)", () => {
    const broken = JSON.parse(openApiText()) as { paths: Record<string, Record<string, Doc>> };
    const op = broken.paths["/v1/retrieve"]?.post;
    if (op === undefined) throw new Error("no POST /v1/retrieve");
    op.responses = { "200": { content: {} } }; // a response without its required description
    expect(validateOpenApi(broken).valid).toBe(false);
  });

  test("docs/openapi.json is what the generator writes now", () => {
    const checkedIn = readFileSync(join(ROOT, "docs/openapi.json"), "utf8");
    if (checkedIn !== openApiText()) {
      throw new Error(
        "docs/openapi.json is stale: a route or schema changed. Run `npm run openapi` and commit docs/openapi.json.",
      );
    }
  });

  test("the text is deterministic: the same document twice, keys in a stable order", () => {
    expect(openApiText()).toBe(openApiText(buildOpenApiDocument()));
    const keys = Object.keys(JSON.parse(openApiText()));
    expect(keys).toEqual([...keys].sort());
  });

  test("the request schemas are the ones the routes validate with (a schema change is a document change)", () => {
    const body = (doc.paths as Record<string, Record<string, Doc>>)["/v1/retrieve"]?.post?.requestBody as Doc;
    const schema = (body.content as Record<string, { schema: Doc }>)["application/json"]?.schema;
    expect(schema).toMatchObject({ required: ["userId"], additionalProperties: false });
    expect(Object.keys((schema as { properties: Doc }).properties)).toEqual(
      expect.arrayContaining(["userId", "sessionId", "query", "useMemory", "policy", "backend", "turnTime"]),
    );
  });
});

/** Validates answers against the schema the document gives for a route's status (ajv, JSON Schema 2020-12). */
function answerValidator(doc: Doc) {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  ajv.addSchema(doc, "memgate-openapi");
  const pointerPart = (s: string) => s.replaceAll("~", "~0").replaceAll("/", "~1");
  const paths = doc.paths as Record<string, Record<string, { responses: Record<string, Doc> }>>;
  return function check(method: string, path: string, status: number, res: request.Response): string[] {
    let answer = paths[path]?.[method]?.responses[String(status)];
    if (answer === undefined) return [`${method} ${path} documents no ${status}`];
    let pointer = `/paths/${pointerPart(path)}/${method}/responses/${status}`;
    if (typeof answer.$ref === "string") {
      pointer = answer.$ref.slice(1); // `#/components/responses/Problem400`
      const name = pointer.split("/").pop() ?? "";
      answer = ((doc.components as Doc).responses as Record<string, Doc>)[name] as Doc;
    }
    const contentType = String(res.headers["content-type"] ?? "").split(";")[0] ?? "";
    const content = answer.content as Record<string, unknown>;
    if (content[contentType] === undefined) return [`${contentType} is not documented for ${status}`];
    const validate = ajv.compile({
      $ref: `memgate-openapi#${pointer}/content/${pointerPart(contentType)}/schema`,
    });
    if (validate(res.body)) return [];
    return (validate.errors ?? []).map((e) => `${e.instancePath} ${e.message ?? ""}`);
  };
}

describe("real answers match the documented schemas", () => {
  const doc = JSON.parse(openApiText()) as Doc;
  const check = answerValidator(doc);
  const chat = { authorization: `Bearer ${KEYS.acmeChat}` };
  const ops = { authorization: `Bearer ${KEYS.acmeOps}` };
  const turn = { userId: "ana", sessionId: "s-1", query: "what does Ana drink?", useMemory: true };
  let h: Harness;
  beforeEach(async () => {
    h = await makeHarness({ env: { MEMGATE_PLAYGROUND: "on" } });
    h.zep.acme?.setUser("ana", [
      makeCandidate({ id: "f1", content: "Ana drinks an oat milk flat white. Always hot.", score: 0.9 }),
      makeCandidate({ id: "m1", content: "Decaf today, please.", score: 0.7, type: "message", role: "user" }),
    ]);
  });
  afterEach(() => h.close());

  test("POST /v1/retrieve 200: a retrieval, with explain, and a fallback", async () => {
    const hit = await request(h.app).post("/v1/retrieve").set(chat).send(turn).expect(200);
    expect(hit.body.memories.length).toBeGreaterThan(0);
    expect(check("post", "/v1/retrieve", 200, hit)).toEqual([]);
    // The same answer parses with the zod schema the document was generated from.
    expect(retrievalPayloadSchema.safeParse(hit.body).success).toBe(true);

    const explained = await request(h.app)
      .post("/v1/retrieve")
      .set(ops)
      .send({ ...turn, explain: true })
      .expect(200);
    expect(explained.body.trace.length).toBeGreaterThan(0);
    expect(check("post", "/v1/retrieve", 200, explained)).toEqual([]);

    const skipped = await request(h.app)
      .post("/v1/retrieve")
      .set(chat)
      .send({ ...turn, useMemory: false })
      .expect(200);
    expect(skipped.body.metadata.fallback.code).toBe("MEMORY_DISABLED");
    expect(check("post", "/v1/retrieve", 200, skipped)).toEqual([]);
  });

  test("a documented schema catches an answer that strays from it (this check can fail)", async () => {
    const res = await request(h.app).post("/v1/retrieve").set(chat).send(turn).expect(200);
    const strayed = { ...res, body: { ...res.body, memories: [{ ...res.body.memories[0], score: "high" }] } };
    // The answer is one of two documented shapes (memories, or index lines with `detail: "index"`): ajv names
    // what each branch found wrong.
    expect(check("post", "/v1/retrieve", 200, strayed as request.Response)).toContain(
      "/memories/0/score must be number",
    );
    const extra = { ...res, body: { ...res.body, undocumented: true } };
    const errors = check("post", "/v1/retrieve", 200, extra as request.Response);
    expect(errors).toContain(" must NOT have additional properties");
    expect(errors).toContain(" must match a schema in anyOf");
    const index = await request(h.app)
      .post("/v1/retrieve")
      .set(chat)
      .send({ ...turn, detail: "index" })
      .expect(200);
    expect(index.body.index.length).toBeGreaterThan(0);
    expect(check("post", "/v1/retrieve", 200, index)).toEqual([]);
  });

  test("problem+json answers: 400 naming the field, 401, 403, 413, 415", async () => {
    const invalid = await request(h.app)
      .post("/v1/retrieve")
      .set(chat)
      .send({ ...turn, userId: "no spaces" })
      .expect(400)
      .expect("content-type", /application\/problem\+json/);
    expect(invalid.body.detail).toMatch(/^userId: /);
    expect(check("post", "/v1/retrieve", 400, invalid)).toEqual([]);
    expect(problemSchema.parse(invalid.body).code).toBe("VALIDATION_FAILED");

    const anonymous = await request(h.app).post("/v1/retrieve").send(turn).expect(401);
    expect(check("post", "/v1/retrieve", 401, anonymous)).toEqual([]);
    const forbidden = await request(h.app).get("/v1/policies").set(chat).expect(403);
    expect(check("get", "/v1/policies", 403, forbidden)).toEqual([]);
    const large = await request(h.app)
      .post("/v1/retrieve")
      .set(chat)
      .send({ ...turn, query: "x".repeat(70_000) })
      .expect(413);
    expect(check("post", "/v1/retrieve", 413, large)).toEqual([]);
    const text = await request(h.app)
      .post("/v1/retrieve")
      .set(chat)
      .set("content-type", "text/plain")
      .send("hello")
      .expect(415);
    expect(check("post", "/v1/retrieve", 415, text)).toEqual([]);
  });

  test("the operations endpoints and the playground's API", async () => {
    const health = await request(h.app).get("/healthz").expect(200);
    expect(check("get", "/healthz", 200, health)).toEqual([]);
    const ready = await request(h.app).get("/readyz");
    expect(check("get", "/readyz", ready.status, ready)).toEqual([]);
    const policies = await request(h.app).get("/v1/policies").set(ops).expect(200);
    expect(check("get", "/v1/policies", 200, policies)).toEqual([]);
    const info = await request(h.app).get("/v1/playground").set(ops).expect(200);
    expect(check("get", "/v1/playground", 200, info)).toEqual([]);
    const valid = await request(h.app)
      .post("/v1/playground/validate")
      .set(ops)
      .send({ text: "name: draft\nversion: 1\n" })
      .expect(200);
    expect(check("post", "/v1/playground/validate", 200, valid)).toEqual([]);
    const compared = await request(h.app)
      .post("/v1/playground/compare")
      .set(ops)
      .send({
        userId: "ana",
        query: "what does Ana drink?",
        policies: [{ name: "default" }, { name: "fast" }],
      })
      .expect(200);
    expect(compared.body.runs).toHaveLength(2);
    expect(check("post", "/v1/playground/compare", 200, compared)).toEqual([]);
    const noGolden = await request(h.app)
      .post("/v1/playground/eval")
      .set(ops)
      .send({ policies: [{ name: "default" }] })
      .expect(404);
    expect(check("post", "/v1/playground/eval", 404, noGolden)).toEqual([]);
  });

  test("GET /openapi.json serves the document without a key", async () => {
    const res = await request(h.app)
      .get("/openapi.json")
      .expect(200)
      .expect("content-type", /application\/json/);
    expect(res.text).toBe(openApiText());
  });
});
