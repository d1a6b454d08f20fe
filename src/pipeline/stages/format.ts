import { formatTimestamp } from "../text/time";
import type { MemoryEntry } from "../types";

export interface FormatOptions {
  /** IANA zone for message timestamps (policy `format.timeZone`); "UTC" renders `…Z`. */
  timeZone: string;
  /** `metadata.includedResults`, shown in the footer. */
  includedResults: number;
}

/**
 * Stage 8: the system prompt, as seed 000's `formatForSystemPrompt`: a heading, then sections by type
 * (messages as `[time] role: content`, facts with their confidence to two decimals, summaries), each followed
 * by a blank line, then a footer; "" when there are no memories. Memories keep their order within a section.
 *
 * Two deliberate differences, so that identical inputs give a byte-identical prompt on any host (CONTRACT §4):
 * (a) times are rendered by `formatTimestamp` (ISO 8601 in UTC, or the wall time and offset in the policy's
 *     zone), not by `toLocaleString()`, which depends on the host's locale and time zone;
 * (b) the footer is `_Retrieved N memories_` ("1 memory" for one): the seed's "in <queryTime>ms" changes on
 *     every request and would make the prompt, and every cache of it, differ for the same memories.
 */
export function formatSystemPrompt(memories: readonly MemoryEntry[], opts: FormatOptions): string {
  if (memories.length === 0) return "";

  const lines: string[] = ["## Relevant Context from Previous Conversations\n"];

  const messages = memories.filter((m) => m.type === "message");
  const facts = memories.filter((m) => m.type === "fact");
  const summaries = memories.filter((m) => m.type === "summary");

  if (messages.length > 0) {
    lines.push("### Previous Messages");
    for (const m of messages) {
      lines.push(`[${formatTimestamp(m.timestamp, opts.timeZone)}] ${m.role || "user"}: ${m.content}`);
    }
    lines.push("");
  }

  if (facts.length > 0) {
    lines.push("### Known Facts");
    for (const f of facts) lines.push(`- ${f.content} (confidence: ${f.score.toFixed(2)})`);
    lines.push("");
  }

  if (summaries.length > 0) {
    lines.push("### Conversation Summaries");
    for (const s of summaries) lines.push(`- ${s.content}`);
    lines.push("");
  }

  const n = opts.includedResults;
  lines.push(`_Retrieved ${n} ${n === 1 ? "memory" : "memories"}_\n`);

  return lines.join("\n");
}
