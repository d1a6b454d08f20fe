import { Router } from "express";
import { openApiText } from "./document";

/**
 * `GET /openapi.json`: the OpenAPI document (./document.ts), public like /healthz — it describes the API and holds
 * no tenant's data, so SDK generators and API tools can fetch it without a key. Built once, on the first request.
 */
export function openApiRoute(): Router {
  const router = Router();
  let text: string | undefined;
  router.get("/openapi.json", function openApi(_req, res) {
    text ??= openApiText();
    res.type("application/json").send(text);
  });
  return router;
}
