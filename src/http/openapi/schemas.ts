/**
 * The answers of the gateway's own routes as zod schemas, for the OpenAPI document (./document.ts) and for tests
 * that parse real answers: the problem+json error (../errors.ts), the operations endpoints (../routes/ops.ts) and
 * the playground's API (../routes/playground.ts). The retrieval payload's schemas are in
 * src/retrieval/payload-schema.ts. Each is held to the type the route answers with at compile time (`Describes`).
 */
import { z } from "zod";
import { MEMORY_TYPES } from "../../pipeline/types";
import type { PolicyStatus, RejectedFile } from "../../policy/registry-types";
import { BACKEND_NAMES } from "../../policy/schema";
import { type Describes, retrievalPayloadSchema } from "../../retrieval/payload-schema";
import type { Comparison, ComparisonRun, RunCandidate } from "../../retrieval/playground";
import { DROP_REASONS, type ShadowReport } from "../../rollout/shadow";
import { ERROR_CODES, type Problem } from "../errors";
import type { EffectivePolicy, ReadinessCheck } from "../routes/ops";

/** RFC 9457 problem details plus `code` and `requestId`: every non-2xx answer of memgate's own routes. */
export const problemSchema = z
  .object({
    type: z.string().meta({ description: "https://memgate.dev/problems/<code in kebab case>" }),
    title: z.string(),
    status: z.int().min(400).max(599),
    detail: z.string().meta({ description: "For a 400, names each offending field path (`userId: …`)." }),
    code: z.enum(ERROR_CODES),
    requestId: z.string().meta({ description: "Also the `x-request-id` response header." }),
  })
  .meta({ id: "Problem" });

export const healthSchema = z
  .object({
    status: z.literal("ok"),
    version: z
      .string()
      .meta({ description: "memgate's version (package.json), as `memgate --version` prints it." }),
  })
  .meta({ id: "Health" });

const readinessCheckSchema = z.object({
  name: z.string(),
  ok: z.boolean(),
  degraded: z.boolean().optional(),
  detail: z.string().optional(),
});

export const readinessSchema = z
  .object({
    status: z.enum(["ready", "degraded", "not_ready", "draining"]),
    checks: z.array(readinessCheckSchema),
  })
  .meta({ id: "Readiness" });

const policyStatusSchema = z.object({
  name: z.string(),
  file: z.string().meta({ description: "The file's name, never the server's path." }),
  version: z.int(),
  hash: z.string(),
  status: z.enum(["active", "retired"]),
  loadedAt: z.string(),
  lastError: z.string().nullable(),
  rejectedChanges: z.int().min(0),
});

const rejectedFileSchema = z.object({ file: z.string(), error: z.string(), at: z.string() });

export const policyListSchema = z
  .object({ policies: z.array(policyStatusSchema), rejected: z.array(rejectedFileSchema) })
  .meta({ id: "PolicyList" });

export const effectivePolicySchema = z
  .object({
    name: z.string(),
    version: z.int(),
    hash: z
      .string()
      .meta({ description: "SHA-256 of the canonical JSON of `policy`: part of every cache key." }),
    file: z.string().meta({ description: "The file's name, never the server's path." }),
    policy: z.record(z.string(), z.unknown()).meta({
      description:
        "The compiled policy with every default filled in (docs/policy.md#fields); optional sections without a default stay absent.",
    }),
  })
  .meta({ id: "EffectivePolicy" });

const policyIdSchema = z.object({ name: z.string(), version: z.int(), hash: z.string() });

export const playgroundInfoSchema = z
  .object({
    tenant: z.string(),
    backends: z.array(z.enum(BACKEND_NAMES)),
    defaultBackend: z.enum(BACKEND_NAMES),
    policies: z.array(policyIdSchema),
    defaultPolicy: z.string(),
    editorFile: z.string(),
    golden: z.object({ questions: z.int().min(0) }).nullable(),
    devMode: z.boolean().meta({ description: "Dev mode (no tenants file): any key works." }),
    users: z.array(z.string()).meta({
      description: "In dev mode the embedded local store's users (sorted, at most 200); else empty.",
    }),
  })
  .meta({ id: "PlaygroundInfo" });

const shadowRuleSchema = z.object({ policy: z.string(), sample: z.number() });
const dropCountSchema = z.object({ reason: z.enum(DROP_REASONS), count: z.int() });

export const shadowReportSchema = z
  .object({
    tenant: z.string(),
    rule: shadowRuleSchema.nullable().meta({ description: "The tenant's shadow policy; null: none." }),
    runs: z.int().meta({ description: "Shadow runs in the window (this process)." }),
    window: z.int().meta({ description: "How many recent runs the report keeps." }),
    counts: z
      .object({ ran: z.int(), dropped: z.int(), error: z.int() })
      .meta({ description: "Offers by outcome since the process started." }),
    tokens: z
      .object({
        primaryMean: z.number(),
        shadowMean: z.number(),
        deltaMean: z.number(),
        deltaMedian: z.number(),
      })
      .nullable(),
    overlap: z.object({ mean: z.number(), median: z.number(), min: z.number() }).nullable(),
    drops: z.object({ primary: z.array(dropCountSchema), shadow: z.array(dropCountSchema) }).meta({
      description: "Why each side left out the memories only the other side kept, most frequent first.",
    }),
    recent: z.array(
      z.object({
        at: z.string(),
        policy: z.string(),
        shadow: z.string(),
        primaryTokens: z.number(),
        shadowTokens: z.number(),
        overlap: z.number(),
        primaryOnly: z.int(),
        shadowOnly: z.int(),
      }),
    ),
  })
  .meta({ id: "ShadowReport" });

export const playgroundModeSchema = z
  .object({ devMode: z.boolean().meta({ description: "Whether any key works (dev mode)." }) })
  .meta({ id: "PlaygroundMode" });

export const policyCheckSchema = z
  .object({
    ok: z.boolean(),
    lines: z.array(z.string()).meta({ description: "What `memgate policy validate` prints for the text." }),
    policy: policyIdSchema.optional().meta({ description: "When ok." }),
  })
  .meta({ id: "PolicyCheck" });

const runCandidateSchema = z.object({
  id: z.string(),
  content: z.string(),
  score: z.number(),
  timestamp: z.string(),
  type: z.enum(MEMORY_TYPES),
  tokens: z.int().min(0),
});

const comparisonRunSchema = z.object({
  label: z.string(),
  source: z.enum(["registry", "editor"]),
  maxTokens: z.int(),
  tokenizer: z.string(),
  candidates: z.array(runCandidateSchema),
  payload: retrievalPayloadSchema,
  tokens: z.array(z.object({ id: z.string(), tokens: z.int().min(0) })),
});

export const comparisonSchema = z
  .object({
    tenant: z.string(),
    userId: z.string(),
    query: z.string(),
    backend: z.enum(BACKEND_NAMES),
    fetched: z.int().min(0),
    fallback: z.object({ code: z.string(), message: z.string() }).nullable(),
    runs: z.array(comparisonRunSchema),
  })
  .meta({ id: "Comparison" });

const tableSchema = z.object({ header: z.array(z.string()), rows: z.array(z.array(z.string())) });

/** The eval's reports and sweep are `memgate eval`'s (src/eval/run.ts, src/eval/sweep.ts): their top level here. */
export const evaluationSchema = z
  .object({
    tenant: z.string(),
    backend: z.enum(BACKEND_NAMES),
    questions: z.int().min(0),
    users: z.int().min(0),
    failed: z.int().min(0),
    reports: z.array(
      z.looseObject({
        label: z.string(),
        policy: policyIdSchema,
        maxTokens: z.int(),
        candidatesPerQuestion: z.int(),
        overall: z.record(z.string(), z.unknown()),
      }),
    ),
    sweep: z.looseObject({ budgets: z.array(z.number()), series: z.array(z.unknown()) }).optional(),
    table: tableSchema,
    sweepTable: tableSchema.optional(),
    chart: z
      .string()
      .optional()
      .meta({ description: "An SVG chart of the sweep, as `memgate eval --chart`." }),
  })
  .meta({ id: "Evaluation" });

/** Compile-time: each schema describes the type its route answers with. */
export type HttpSchemasDescribeTheirTypes = [
  Check<Describes<z.output<typeof problemSchema>, Problem>>,
  Check<Describes<z.output<typeof readinessCheckSchema>, ReadinessCheck>>,
  Check<Describes<z.output<typeof policyStatusSchema>, PolicyStatus>>,
  Check<Describes<z.output<typeof rejectedFileSchema>, RejectedFile>>,
  Check<Describes<z.output<typeof effectivePolicySchema>, EffectivePolicy>>,
  Check<Describes<z.output<typeof runCandidateSchema>, RunCandidate>>,
  Check<Describes<z.output<typeof comparisonRunSchema>, ComparisonRun>>,
  Check<Describes<z.output<typeof comparisonSchema>, Comparison>>,
  Check<Describes<z.output<typeof shadowReportSchema>, ShadowReport>>,
];
type Check<T extends true> = T;
