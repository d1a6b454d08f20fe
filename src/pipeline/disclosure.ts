/**
 * Progressive disclosure (seed 004, docs/api.md#progressive-disclosure), the pure part: what an agent reads first
 * (layer 1, the index: one short line per kept memory), what it reads around one memory (layer 2, the timeline:
 * the same lines for the turns before and after it) and what it reads last (layer 3, the details: the memories
 * whole, redacted and screened by the policy, within its token budget). No I/O; the retrieval core
 * (src/retrieval/service.ts) fetches, this shapes.
 */
import type { CompiledPolicy } from "../policy/compile";
import type { Envelope } from "../policy/schema";
import { type Citation, citationOf } from "./citations";
import { toEntry, toWorkItem } from "./index";
import { analyzeQuery } from "./query/analyze";
import { budgetStage, fitToTokens } from "./stages/budget";
import { ENVELOPE_PREAMBLE } from "./stages/format";
import { redactRewritten, redactStage } from "./stages/redact";
import { screenStage } from "./stages/screen";
import { similarityOf } from "./stages/select";
import { certify, type Sufficiency } from "./sufficiency";
import { ENVELOPE_TAG, neutralizeContent } from "./text/neutralize";
import { relevanceQuery, scoreSentences } from "./text/relevance";
import { sentenceSpans } from "./text/sentences";
import { formatTimestamp } from "./text/time";
import type { Candidate, MemoryEntry, MemoryType, Role, Tokenizer, WorkItem } from "./types";

/** The most tokens a gist may have (seed 004's "~50 tokens per result"), counted by the policy's tokenizer. */
export const GIST_MAX_TOKENS = 50;

/** One line of the index (layer 1) or of a timeline (layer 2). */
export interface IndexLine {
  id: string;
  /** The memory's best sentence for the question (its first without one), at most `GIST_MAX_TOKENS`. */
  gist: string;
  type: MemoryType;
  role?: Role;
  timestamp: string;
  score: number;
  citation: Citation;
  /** Timeline only: where the turn stands against the asked memory. */
  relation?: "before" | "self" | "after";
}

/**
 * Each memory's gist: the sentence that best matches `query` by the clip stage's scoring (BM25 over every
 * sentence of the memories given, text/relevance.ts; ties: the earlier sentence), or the first sentence when
 * none matches or there is no query; cut at a word boundary to `GIST_MAX_TOKENS` (ending "...") when longer.
 */
export function gists(contents: readonly string[], query: string, tokenizer: Tokenizer): string[] {
  const spans = contents.map((text) => sentenceSpans(text));
  const prepared = query.trim() === "" ? undefined : relevanceQuery(query);
  const scores =
    prepared === undefined || prepared.terms.length === 0
      ? undefined
      : scoreSentences(
          contents.map((text, i) => ({ text, sentences: spans[i] ?? [] })),
          prepared.terms,
          prepared.language,
        );
  return contents.map((text, i) => {
    const own = spans[i] ?? [];
    let best = 0;
    const ownScores = scores?.[i] ?? [];
    for (let j = 1; j < ownScores.length; j++) {
      if ((ownScores[j]?.score ?? 0) > (ownScores[best]?.score ?? 0)) best = j;
    }
    const span = own[best];
    const sentence = (span === undefined ? text : text.slice(span.start, span.end)).trim();
    if (tokenizer.count(sentence) <= GIST_MAX_TOKENS) return sentence;
    return fitToTokens(sentence, GIST_MAX_TOKENS, tokenizer) ?? "...";
  });
}

/**
 * The index lines of shaped memories (their contents already redacted, screened and clipped by the policy); each
 * line's citation is the one `/v1/retrieve` gives (./citations.ts), `backend` the one that answered.
 */
export function indexLines(
  memories: readonly MemoryEntry[],
  query: string,
  tokenizer: Tokenizer,
  backend: string,
): IndexLine[] {
  const texts = gists(
    memories.map((m) => m.content),
    query,
    tokenizer,
  );
  return memories.map((m, i) => {
    const line: IndexLine = {
      id: m.id,
      gist: texts[i] ?? "",
      type: m.type,
      timestamp: m.timestamp,
      score: m.score,
      citation: citationOf(m, backend),
    };
    if (m.role !== undefined) line.role = m.role;
    return line;
  });
}

/**
 * The index as a prompt block: one line per memory, `- [id] time type(/role): gist`, each neutralized as the
 * full block's lines are (one line per memory, no forged headings), and wrapped in the policy's `tagged`
 * envelope as the full block is (./stages/format.ts); "" without memories.
 */
export function formatIndex(lines: readonly IndexLine[], timeZone: string, envelope?: Envelope): string {
  if (lines.length === 0) return "";
  const tagged = envelope === "tagged";
  const safe = (text: string) => neutralizeContent(text, tagged);
  const header = "## Memory index (ask for details by id)\n";
  const out = tagged ? [ENVELOPE_PREAMBLE, `<${ENVELOPE_TAG}>`, header] : [header];
  for (const l of lines) {
    const who = l.role === undefined ? l.type : `${l.type}/${l.role}`;
    const time = formatTimestamp(l.timestamp, timeZone);
    out.push(`- [${safe(l.id)}] ${safe(time)} ${who}: ${safe(l.gist)}`);
  }
  out.push(tagged ? `\n</${ENVELOPE_TAG}>\n` : "");
  return out.join("\n");
}

/**
 * The sufficiency certificate of kept memories for `query` (./sufficiency.ts), for an index whose policy does not
 * compute it (`sufficiency.enabled: false`): the agent's "do I need more?" always has an answer.
 */
export function certificateFor(
  memories: readonly MemoryEntry[],
  query: string,
  threshold: number,
  turnTime: number | undefined,
): Sufficiency {
  const items = memories.map(toWorkItem);
  return certify(items, analyzeQuery(query, turnTime), threshold, similarityOf(items));
}

export interface ShapedMemories {
  memories: MemoryEntry[];
  totalTokens: number;
  appliedFilters: string[];
}

/**
 * Memories fetched by id (layers 2 and 3), shaped by the policy: redaction and the injection screen as in a
 * retrieval (a memory a `drop` detector fires on is left out), then, with `budget`, the policy's token budget
 * in the order given. No threshold, dedup, ranking or clipping: the caller asked for these memories whole.
 */
export function shapeMemories(
  candidates: readonly Candidate[],
  compiled: CompiledPolicy,
  userId: string,
  opts: { budget: boolean },
): ShapedMemories {
  const { policy, ctx } = compiled;
  let items: WorkItem[] = candidates.map(toWorkItem);
  const applied: string[] = [];
  if (ctx.redactor.enabled) {
    items = redactStage(items, policy, ctx).items;
    applied.push("redaction");
  }
  if (ctx.screener?.enabled === true) {
    const before = items;
    items = screenStage(items, policy, ctx).items;
    redactRewritten(before, items, ctx); // the screen's rewrites redacted again, as in runPipeline
    applied.push("injection");
  }
  let totalTokens = 0;
  if (opts.budget) {
    const fitted = budgetStage(items, policy, ctx);
    items = fitted.items;
    totalTokens = fitted.usedTokens;
    applied.push("token_budget");
  } else {
    for (const item of items) totalTokens += ctx.tokenizer.count(item.content);
  }
  const collection = `user:${userId}`;
  return {
    memories: items.map((item) => toEntry(item, collection, policy.retrieval.searchType)),
    totalTokens,
    appliedFilters: applied,
  };
}
