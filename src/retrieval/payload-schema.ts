/**
 * The retrieval answer (./payload.ts) as zod schemas: what the OpenAPI document (src/http/openapi) publishes as
 * `POST /v1/retrieve`'s 200 and the playground's runs, and what tests parse real answers with. The TypeScript
 * interfaces stay where the code builds the payload; each schema below is held to its interface at compile time
 * (`Describes`): a field added to, or removed from, an interface and not here fails `npm run typecheck`, so the
 * published document cannot silently drift from the payload.
 */
import { z } from "zod";
import { SLOT_KINDS } from "../pipeline/answer-slot";
import type { Citation } from "../pipeline/citations";
import type { IndexLine } from "../pipeline/disclosure";
import type { Sufficiency } from "../pipeline/sufficiency";
import {
  type KeptSentence,
  MEMORY_TYPES,
  type MemoryEntry,
  type Provenance,
  ROLES,
  type StageTrace,
  type TraceChange,
} from "../pipeline/types";
import type { FallbackInfo, IndexPayload, RetrievalMetadata, RetrievalPayload } from "./payload";

/**
 * `true` when the schema output `S` describes the type `T` at this level: every `T` is an `S`, and both have the
 * same keys (nested objects are checked by their own schemas' `Describes`).
 */
export type Describes<S, T> = [T] extends [S]
  ? [Exclude<keyof T, keyof S> | Exclude<keyof S, keyof T>] extends [never]
    ? true
    : false
  : false;

export const provenanceSchema = z
  .object({
    collection: z.string(),
    searchType: z.string(),
    originalLength: z.int().min(0).meta({ description: "Length (UTF-16 code units) before clipping." }),
    wasRedacted: z.boolean(),
    backend: z.string().optional(),
    sourceId: z.string().optional(),
    backendScore: z
      .number()
      .optional()
      .meta({ description: "The backend's own score, not on the common [0,1] scale." }),
  })
  .meta({ id: "Provenance" });

export const memoryEntrySchema = z
  .object({
    id: z.string(),
    content: z.string().meta({ description: "Redacted, screened, clipped and fitted to the token budget." }),
    score: z.number().min(0).max(1),
    timestamp: z.string().meta({ description: "ISO 8601." }),
    sessionId: z.string(),
    messageId: z.string().optional(),
    type: z.enum(MEMORY_TYPES),
    role: z.enum(ROLES).optional(),
    flags: z
      .array(z.string())
      .optional()
      .meta({ description: "`injection:<detector>` for each injection detector that fired on this memory." }),
    provenance: provenanceSchema,
    ref: z.string().optional().meta({
      description: "Policy `format.citations: on`: the memory's ref (`m1`, `m2`, … in prompt order).",
    }),
  })
  .meta({ id: "MemoryEntry" });

export const citationSchema = z
  .object({
    id: z.string(),
    backend: z.string(),
    sessionId: z.string(),
    messageId: z.string().optional(),
    timestamp: z.string().meta({ description: "ISO 8601." }),
  })
  .meta({ id: "Citation" });

const keptSentenceSchema = z.object({
  sentence: z.int().min(1),
  why: z.enum(["match", "context", "leading"]),
  score: z.number(),
  terms: z.array(z.string()).optional(),
  answer: z.number().optional(),
});

const traceChangeSchema = z.object({
  id: z.string(),
  reason: z.string().meta({
    description:
      "below_min_score, duplicate_of:<id>, beyond_topK, beyond_maxMemories, clipped, truncated_by_budget, dropped_by_budget, redacted:<detector>, injection:<detector>:<action>.",
  }),
  sentences: z.object({ total: z.int().min(0), kept: z.array(keptSentenceSchema) }).optional(),
});

export const stageTraceSchema = z
  .object({
    stage: z.enum([
      "fetch",
      "redaction",
      "injection",
      "score_threshold",
      "deduplication",
      "top_k",
      "interleave",
      "rank",
      "select",
      "clip",
      "token_budget",
      "format",
    ]),
    in: z.int().min(0),
    out: z.int().min(0),
    changes: z.array(traceChangeSchema),
    detail: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])).optional(),
    ranking: z
      .array(
        z.object({
          id: z.string(),
          rank: z.int(),
          relevance: z.number(),
          signals: z.record(z.string(), z.number()),
        }),
      )
      .optional(),
  })
  .meta({ id: "StageTrace" });

const sufficiencySchema = z.object({
  completeness: z.number(),
  redundancy: z.number(),
  missing: z.array(z.string()),
  verdict: z.enum(["sufficient", "partial", "insufficient"]),
  answerSlot: z
    .object({ kind: z.enum(SLOT_KINDS), focus: z.string(), filled: z.boolean() })
    .optional()
    .meta({
      description:
        "Policy `sufficiency.answerSlot`: whether the name or number asked for stands by its subject.",
    }),
});

const fallbackSchema = z
  .object({
    code: z
      .string()
      .meta({ description: "MEMORY_DISABLED, SESSION_INVALID, INVALID_QUERY, … (docs/api.md)." }),
    action: z.enum(["skip", "empty", "cache"]),
    message: z.string(),
  })
  .meta({ id: "Fallback" });

const configSchema = z.object({
  topK: z.int(),
  clipSentences: z.int(),
  maxTokens: z.int(),
  searchType: z.string(),
  minScore: z.number(),
});

export const retrievalMetadataSchema = z
  .object({
    queryTime: z.number().meta({ description: "Milliseconds." }),
    totalResults: z.int().min(0),
    includedResults: z.int().min(0),
    totalTokens: z.int().min(0),
    appliedFilters: z.array(z.string()),
    config: configSchema,
    policy: z.object({ name: z.string(), version: z.int(), hash: z.string() }),
    backend: z.string(),
    cache: z.enum(["hit", "miss", "stale", "bypass"]),
    fallback: fallbackSchema.nullable(),
    sufficiency: sufficiencySchema
      .extend({
        expanded: z.boolean(),
        expansion: z
          .object({
            with: z.enum(["more", "missing"]),
            query: z.string(),
            limit: z.int().min(1),
            added: z.int().min(0),
            kept: z.boolean(),
          })
          .optional()
          .meta({
            description:
              "Policy `sufficiency.expand`: what the expansion round searched with (`more`: the question for more candidates; `missing`: its missing words), the query and limit sent, candidates added, whether its answer was kept.",
          }),
      })
      .optional(),
    reinforcement: z.object({ available: z.boolean() }).optional().meta({
      description: "Policy `ranking.reinforcement`: whether the reinforcement counts could be read.",
    }),
  })
  .meta({ id: "RetrievalMetadata" });

/** `POST /v1/retrieve`'s 200: a retrieval or a declared fallback (`metadata.fallback`), never a 5xx. */
export const retrievalPayloadSchema = z
  .object({
    memories: z.array(memoryEntrySchema),
    citations: z
      .record(z.string(), citationSchema)
      .optional()
      .meta({ description: "Policy `format.citations: on` only: ref → where the memory came from." }),
    metadata: retrievalMetadataSchema,
    systemPrompt: z.string().meta({ description: '"" when no memories.' }),
    trace: z.array(stageTraceSchema).optional().meta({ description: "Only with `explain` (admin scope)." }),
  })
  .meta({ id: "RetrievalPayload" });

const indexLineSchema = z
  .object({
    id: z.string(),
    gist: z.string().meta({ description: "The memory's best sentence for the question, at most 50 tokens." }),
    type: z.enum(MEMORY_TYPES),
    role: z.enum(ROLES).optional(),
    timestamp: z.string().meta({ description: "ISO 8601." }),
    score: z.number(),
    citation: citationSchema,
    relation: z
      .enum(["before", "self", "after"])
      .optional()
      .meta({ description: "Timeline only: where the turn stands against the asked memory." }),
  })
  .meta({ id: "IndexLine" });

/**
 * Progressive disclosure's layer 1 (`detail: "index"` on `POST /v1/retrieve`) and layer 2 (`POST
 * /v1/memories/timeline`): index lines instead of memories.
 */
export const indexPayloadSchema = z
  .object({
    index: z.array(indexLineSchema),
    metadata: retrievalMetadataSchema.extend({
      indexTokens: z.int().min(0).meta({ description: "The index lines' gists, in the policy's tokenizer." }),
    }),
    systemPrompt: z.string().meta({ description: 'The index block; "" when no memories.' }),
  })
  .meta({ id: "IndexPayload" });

/** The payload as the HTTP API sends it: `native` is a drop-in door's internal part, never sent on /v1. */
type PublicPayload = Omit<RetrievalPayload, "native">;

/** Compile-time: each schema describes its interface (see the top of this file). */
export type PayloadSchemasDescribeTheirTypes = [
  Check<Describes<z.output<typeof provenanceSchema>, Provenance>>,
  Check<Describes<z.output<typeof memoryEntrySchema>, MemoryEntry>>,
  Check<Describes<z.output<typeof citationSchema>, Citation>>,
  Check<Describes<z.output<typeof keptSentenceSchema>, KeptSentence>>,
  Check<Describes<z.output<typeof traceChangeSchema>, TraceChange>>,
  Check<Describes<z.output<typeof stageTraceSchema>, StageTrace>>,
  Check<Describes<z.output<typeof sufficiencySchema>, Sufficiency>>,
  Check<Describes<z.output<typeof fallbackSchema>, FallbackInfo>>,
  Check<Describes<z.output<typeof configSchema>, RetrievalMetadata["config"]>>,
  Check<Describes<z.output<typeof retrievalMetadataSchema>, RetrievalMetadata>>,
  Check<Describes<z.output<typeof retrievalPayloadSchema>, PublicPayload>>,
  Check<Describes<z.output<typeof indexLineSchema>, IndexLine>>,
  Check<Describes<z.output<typeof indexPayloadSchema>, IndexPayload>>,
];
type Check<T extends true> = T;
