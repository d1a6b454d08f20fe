/**
 * The secure headers are helmet's, recorded once and replayed (src/http/security-headers.ts): every answer gets
 * exactly the headers helmet itself would set, for the API's options and the playground page's.
 */
import express, { type RequestHandler } from "express";
import helmet, { type HelmetOptions } from "helmet";
import request from "supertest";
import { API_HELMET, securityHeaders, UI_HELMET, uiSecurityHeaders } from "../../src/http/security-headers";

async function headersWith(middleware: RequestHandler): Promise<Record<string, unknown>> {
  const app = express();
  app.use(middleware);
  app.get("/x", (_req, res) => {
    res.json({ ok: true });
  });
  const res = await request(app).get("/x").expect(200);
  const { date: _date, ...rest } = res.headers;
  return rest;
}

describe.each<[string, HelmetOptions, () => RequestHandler]>([
  ["the API", API_HELMET, securityHeaders],
  ["the playground page", UI_HELMET, uiSecurityHeaders],
])("secure headers of %s", (_name, options, replayed) => {
  test("the same headers as helmet's own middleware, on every answer", async () => {
    const expected = await headersWith(helmet(options));
    const middleware = replayed();
    expect(await headersWith(middleware)).toEqual(expected);
    expect(await headersWith(middleware)).toEqual(expected);
    expect(expected["content-security-policy"]).toContain("default-src 'none'");
    expect(expected["x-frame-options"]).toBe("DENY");
    expect(expected["x-powered-by"]).toBeUndefined();
  });
});
