/**
 * `npm run openapi`: writes docs/openapi.json, the OpenAPI document generated from the route registry and the zod
 * schemas (src/http/openapi). Deterministic: the same code gives the same bytes (test/http/openapi.test.ts holds
 * the checked-in file to it).
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { openApiText } from "../src/http/openapi/document";

const file = join(__dirname, "..", "docs", "openapi.json");
writeFileSync(file, openApiText());
process.stdout.write(`wrote ${file}\n`);
