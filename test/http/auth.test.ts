import { type AddressInfo, connect } from "node:net";
import express, { type ErrorRequestHandler } from "express";
import request from "supertest";
import { authenticate, principalOf, requireScope } from "../../src/http/auth";
import { HttpProblem } from "../../src/http/errors";
import { devDirectory } from "../../src/tenants/directory";
import { tenantsFromText } from "../../src/tenants/file";
import { hashKey } from "../../src/tenants/keys";
import type { TenantDirectory } from "../../src/tenants/types";

const ACME_CHAT = "mg_acme_chat_Zx81";
const ACME_OPS = "mg_acme_ops_Qw72";
const GLOBEX = "mg_globex_app_Pp03";

const directory = tenantsFromText(
  `
tenants:
  - id: acme
    keys:
      - { name: chat, sha256: ${hashKey(ACME_CHAT)}, scopes: [retrieve] }
      - { name: ops, sha256: ${hashKey(ACME_OPS)}, scopes: [retrieve, admin] }
    backends: { local: { dataFile: acme.jsonl } }
  - id: globex
    keys:
      - { name: app, sha256: ${hashKey(GLOBEX)}, scopes: [retrieve, admin, proxy] }
    backends: { local: { dataFile: globex.jsonl } }
`,
  "t.yaml",
  {},
);

const errors: ErrorRequestHandler = (err, _req, res, next) => {
  if (!(err instanceof HttpProblem)) return next(err);
  res.status(err.status).set(err.headers).json({ code: err.code, detail: err.message });
};

function app(dir: TenantDirectory = directory) {
  const a = express();
  a.use(authenticate(dir));
  a.get("/who", (_req, res) => {
    const p = principalOf(res);
    res.json({ tenant: p.tenant.id, keyId: p.keyId, scopes: [...p.scopes].sort() });
  });
  a.get("/admin", requireScope("admin"), (_req, res) => {
    res.json({ ok: true });
  });
  a.use(errors);
  return a;
}

describe("authenticate middleware: the three ways to send a key", () => {
  test.each([
    ["Authorization", `Bearer ${ACME_CHAT}`],
    ["Authorization", `bearer ${ACME_CHAT}`],
    ["Authorization", `BEARER   ${ACME_CHAT}  `],
    ["x-api-key", ACME_CHAT],
    ["X-API-Key", ` ${ACME_CHAT}`],
    ["Authorization", `Api-Key ${ACME_CHAT}`],
    ["Authorization", `api-key ${ACME_CHAT}`],
    ["Authorization", `API-KEY ${ACME_CHAT}`],
  ])("%s: %s", async (header, value) => {
    const res = await request(app()).get("/who").set(header, value);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ tenant: "acme", keyId: hashKey(ACME_CHAT).slice(0, 8), scopes: ["retrieve"] });
  });

  test("the same key in both headers is accepted", async () => {
    const res = await request(app())
      .get("/who")
      .set("Authorization", `Bearer ${ACME_CHAT}`)
      .set("x-api-key", ACME_CHAT);
    expect(res.status).toBe(200);
  });

  test("a key of tenant A never yields tenant B", async () => {
    const a = await request(app()).get("/who").set("x-api-key", ACME_OPS);
    const b = await request(app()).get("/who").set("x-api-key", GLOBEX);
    expect(a.body.tenant).toBe("acme");
    expect(b.body.tenant).toBe("globex");
    expect(a.body.scopes).toEqual(["admin", "retrieve"]);
    expect(b.body.scopes).toEqual(["admin", "proxy", "retrieve"]);
  });
});

describe("authenticate middleware: refusals", () => {
  const expect401 = async (set: Record<string, string>, detail: RegExp) => {
    let req = request(app()).get("/who");
    for (const [k, v] of Object.entries(set)) req = req.set(k, v);
    const res = await req;
    expect(res.status).toBe(401);
    expect(res.body.code).toBe("UNAUTHORIZED");
    expect(res.body.detail).toMatch(detail);
    expect(res.headers["www-authenticate"]).toBe('Bearer realm="memgate"');
    for (const v of Object.values(set)) {
      const secret = v.split(" ").pop() ?? "";
      if (secret.length > 6) expect(res.text).not.toContain(secret);
    }
  };

  test("no key", () => expect401({}, /^missing API key/));
  test("unknown key", () => expect401({ "x-api-key": "mg_not_a_real_key" }, /^unknown API key$/));
  test("the hash of a key is not a key", () =>
    expect401({ "x-api-key": hashKey(ACME_CHAT) }, /^unknown API key$/));
  test("'Bearer' with no key", () =>
    expect401({ Authorization: "Bearer" }, /^malformed Authorization header/));
  test("'Bearer ' with only spaces", () =>
    expect401({ Authorization: "Bearer    " }, /^malformed Authorization/));
  test("a bare key without a scheme", () =>
    expect401({ Authorization: ACME_CHAT }, /^malformed Authorization/));
  test("an unsupported scheme", () =>
    expect401(
      { Authorization: `Basic ${Buffer.from("a:b").toString("base64")}` },
      /^unsupported Authorization scheme/,
    ));
  test("a key with a space in it", () => expect401({ Authorization: "Bearer two words" }, /^malformed key/));
  test("an empty x-api-key", () => expect401({ "x-api-key": " " }, /^malformed x-api-key header/));
  test("two different keys in two headers", () =>
    expect401({ Authorization: `Bearer ${ACME_CHAT}`, "x-api-key": GLOBEX }, /different keys/));
  test("a too-long key", () => expect401({ "x-api-key": "k".repeat(513) }, /^malformed x-api-key/));

  test("two Authorization headers (Node would keep only the first)", async () => {
    const a = app().listen(0, "127.0.0.1");
    try {
      await new Promise((r) => a.once("listening", r));
      const { port } = a.address() as AddressInfo;
      // A raw request: HTTP clients merge or refuse repeated Authorization headers.
      const head = await new Promise<string>((resolve, reject) => {
        const socket = connect(port, "127.0.0.1", () => {
          socket.write(
            `GET /who HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${ACME_CHAT}\r\n` +
              `Authorization: Bearer ${GLOBEX}\r\nConnection: close\r\n\r\n`,
          );
        });
        let data = "";
        socket.on("data", (chunk) => {
          data += String(chunk);
        });
        socket.on("end", () => resolve(data));
        socket.on("error", reject);
      });
      const status = Number(head.split(" ")[1]);
      expect(head).toContain("more than one Authorization header");
      expect(status).toBe(401);
    } finally {
      a.close();
    }
  });
});

describe("requireScope", () => {
  test("403 FORBIDDEN naming the scope when the key lacks it", async () => {
    const res = await request(app()).get("/admin").set("Authorization", `Bearer ${ACME_CHAT}`);
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ code: "FORBIDDEN", detail: "this key lacks the 'admin' scope" });
  });

  test("passes a key that has it", async () => {
    const res = await request(app()).get("/admin").set("Authorization", `Api-Key ${ACME_OPS}`);
    expect(res.status).toBe(200);
  });

  test("refuses (500) when authenticate did not run, rather than letting the request through", async () => {
    const a = express();
    a.get("/admin", requireScope("admin"), (_req, res) => {
      res.json({ ok: true });
    });
    a.use(errors);
    const res = await request(a).get("/admin");
    expect(res.status).toBe(500);
  });
});

describe("dev mode", () => {
  const dev = devDirectory({}, { backend: "local", localDataFile: "config/demo-memories.jsonl" });

  test("no key, or any key, is the dev tenant with every scope", async () => {
    for (const set of [{}, { "x-api-key": "whatever" }, { Authorization: "Api-Key z_sdk_key" }]) {
      let req = request(app(dev)).get("/admin");
      for (const [k, v] of Object.entries(set)) req = req.set(k, v);
      expect((await req).status).toBe(200);
    }
    const res = await request(app(dev)).get("/who");
    expect(res.body).toEqual({ tenant: "dev", keyId: "dev", scopes: ["admin", "proxy", "retrieve"] });
  });

  test("a malformed header is still refused", async () => {
    const res = await request(app(dev)).get("/who").set("Authorization", "Bearer");
    expect(res.status).toBe(401);
  });
});
