/**
 * Citations (seed 004's citation contract, policy `format.citations: on`): each kept memory gets a short ref —
 * `m1`, `m2`, … in the order the system prompt shows the memories — written at the start of its prompt line
 * (`[m2] `), in `memories[i].ref`, and as a key of the payload's `citations`, whose value says where the memory
 * came from. A model can answer "as you said on 3 May [m2]" and the application can link it.
 *
 * This file is the one place a citation is built (`citationOf`): every door that shows citations uses it.
 */
import type { MemoryEntry } from "./types";

/** Where a cited memory came from (docs/api.md#citations). `messageId` only when the memory has one. */
export interface Citation {
  id: string;
  backend: string;
  sessionId: string;
  messageId?: string;
  timestamp: string;
}

/** ref → citation, in ref order (`m1` first). */
export type Citations = Record<string, Citation>;

/** The ref of the memory at 0-based `position` in prompt order: `m1` for the first. */
export function refOf(position: number): string {
  return `m${position + 1}`;
}

/**
 * What a ref adds to its memory's prompt line: `[m1] ` before the line's text. Its tokens (the policy's tokenizer)
 * count against the budget (src/pipeline/stages/budget.ts).
 */
export function refLabel(ref: string): string {
  return `[${ref}] `;
}

/** A ref label as it appears in a prompt; a memory's own text that looks like one is escaped (`\[m2]`). */
export const REF_IN_TEXT = /\[(m[1-9][0-9]*)\]/g;

/**
 * The citation of one memory. `backend`: the memory's own (`provenance.backend`) when the adapter set one, else
 * the backend that answered the retrieval.
 */
export function citationOf(
  memory: Pick<MemoryEntry, "id" | "sessionId" | "messageId" | "timestamp" | "provenance">,
  backend: string,
): Citation {
  return {
    id: memory.id,
    backend: memory.provenance.backend ?? backend,
    sessionId: memory.sessionId,
    ...(memory.messageId === undefined ? {} : { messageId: memory.messageId }),
    timestamp: memory.timestamp,
  };
}

/**
 * Gives each memory its ref by its place in `promptOrder` (indices into `memories`, as the format stage shows
 * them) and returns the memories with `ref` set (new objects; the input is not changed) and the citations.
 */
export function cite(
  memories: readonly MemoryEntry[],
  promptOrder: readonly number[],
  backend: string,
): { memories: MemoryEntry[]; citations: Citations } {
  const refs = new Array<string>(memories.length);
  const citations: Citations = {};
  promptOrder.forEach((index, position) => {
    const memory = memories[index];
    if (memory === undefined) return;
    const ref = refOf(position);
    refs[index] = ref;
    citations[ref] = citationOf(memory, backend);
  });
  const cited = memories.map((memory, i) => {
    const ref = refs[i];
    return ref === undefined ? memory : { ...memory, ref };
  });
  return { memories: cited, citations };
}
