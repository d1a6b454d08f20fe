/**
 * The OpenTelemetry GenAI semantic conventions memgate's retrieval spans carry beside their own `memgate.*`
 * attributes (docs/observability.md#span-catalogue). Names and values are the constants of
 * `@opentelemetry/semantic-conventions` 1.40 (its incubating entry: the GenAI conventions are still in
 * development), imported, never spelled out here. The conventions' retrieval span is "a request to a … framework
 * that retrieves relevant information or context from a vector database or search system": both
 * `memgate.retrieve` (the whole retrieval) and `memgate.backend.search` (the call to the memory service) are one.
 *
 * Left out on purpose: `gen_ai.retrieval.query.text` (the query: never in telemetry, docs/api.md#privacy) and
 * `gen_ai.retrieval.documents` (opt-in; memory ids), `gen_ai.provider.name` (for model providers; Zep and
 * OpenMemory are none of its values).
 */
import type { Attributes } from "@opentelemetry/api";
import {
  ATTR_GEN_AI_DATA_SOURCE_ID,
  ATTR_GEN_AI_OPERATION_NAME,
  ATTR_GEN_AI_REQUEST_TOP_K,
  GEN_AI_OPERATION_NAME_VALUE_RETRIEVAL,
} from "@opentelemetry/semantic-conventions/incubating";

/** Set when a retrieval span starts (the conventions want it there, for sampling): `gen_ai.operation.name`. */
export const GENAI_RETRIEVAL: Attributes = {
  [ATTR_GEN_AI_OPERATION_NAME]: GEN_AI_OPERATION_NAME_VALUE_RETRIEVAL,
};

/**
 * What is known once the backend is: `gen_ai.data_source.id` (the backend answering: `zep`, `openmemory`,
 * `local`, or `replay`) and `gen_ai.request.top_k` (how many results were asked for: the policy's `topK` on
 * `memgate.retrieve`, the fetch size on `memgate.backend.search`).
 */
export function genAiSource(backend: string, topK: number): Attributes {
  return { [ATTR_GEN_AI_DATA_SOURCE_ID]: backend, [ATTR_GEN_AI_REQUEST_TOP_K]: topK };
}
