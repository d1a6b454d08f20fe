import { z } from "zod";
import { SLOT_KINDS } from "../pipeline/answer-slot";

/**
 * The policy file format (docs/policy.md#fields). Ranges are seed 000's AdminMemorySettings.
 * Objects are strict: an unknown key is a typo an ops team wants to hear about.
 */

export const BACKEND_NAMES = ["local", "zep", "openmemory"] as const;
export type BackendName = (typeof BACKEND_NAMES)[number];

export const SEARCH_TYPES = ["hybrid", "semantic", "keyword"] as const;
export const STRATEGIES = ["alternate", "score_first", "recency_first", "weighted"] as const;
export const TOKENIZERS = ["o200k_base", "cl100k_base", "approx"] as const;
/** Which sentences clipping keeps: seed 000's first ones, the ones that best match the query, or all. */
export const CLIP_MODES = ["leading", "relevant", "off"] as const;
export type ClipMode = (typeof CLIP_MODES)[number];
/** What the budget does with a memory that does not fit: cut it and stop (seed 000), or leave it out and go on. */
export const PACKINGS = ["truncate", "skip"] as const;
/** How the system prompt is wrapped: not at all (seed 000), or in a data-only `<recalled_memories>` envelope. */
export const ENVELOPES = ["none", "tagged"] as const;
export type Envelope = (typeof ENVELOPES)[number];
/** Citations (seed 004): a short ref per memory in the prompt and `citations` in the payload, or none (seed 000). */
export const CITATIONS = ["on", "off"] as const;
/** What the sufficiency expansion round searches with (src/pipeline/expansion.ts). */
export const EXPAND_WITH = ["more", "missing", "both"] as const;
/**
 * The sections of `budget.sections`, in the order they are filled and shown: summaries first (seed 001), then
 * facts, then messages. Each is a memory `type` (src/pipeline/types.ts `MEMORY_TYPES`).
 */
export const SECTION_TYPES = ["summary", "fact", "message"] as const;
export type SectionType = (typeof SECTION_TYPES)[number];
export type TokenizerName = (typeof TOKENIZERS)[number];
/** Secrets detectors (src/pipeline/redaction/secrets.ts): credentials with a known shape, then a context-gated one. */
export const SECRET_DETECTOR_NAMES = [
  "private_key",
  "jwt",
  "github_token",
  "aws_access_key",
  "slack_token",
  "stripe_key",
  "google_api_key",
  "openai_key",
  "generic_secret",
] as const;
export const DETECTORS = [
  "email",
  "ssn",
  "credit_card",
  "phone",
  "ipv4",
  "iban",
  "ipv6",
  ...SECRET_DETECTOR_NAMES,
] as const;
export type DetectorName = (typeof DETECTORS)[number];
/** Injection detectors (src/pipeline/screen/detectors.ts): instruction-like content in a recalled memory. */
export const INJECTION_DETECTORS = [
  "role_marker",
  "instruction_override",
  "tool_call",
  "exfil_link",
  "active_html",
] as const;
export type InjectionDetectorName = (typeof INJECTION_DETECTORS)[number];
/** What a firing injection detector does: mark the memory, replace what matched, or leave the memory out. */
export const INJECTION_ACTIONS = ["flag", "neutralize", "drop"] as const;
export type InjectionAction = (typeof INJECTION_ACTIONS)[number];
export const FALLBACK_ACTIONS = ["skip", "empty", "cache"] as const;
export type FallbackAction = (typeof FALLBACK_ACTIONS)[number];
export const FALLBACK_CODES = [
  "MEMORY_DISABLED",
  "SESSION_INVALID",
  "INVALID_QUERY",
  "COLLECTION_NOT_FOUND",
  "RATE_LIMITED",
  "ZEP_UNAVAILABLE",
  "OPENMEMORY_UNAVAILABLE",
  "LOCAL_UNAVAILABLE",
  "POLICY_FAILED",
] as const;
export type FallbackCode = (typeof FALLBACK_CODES)[number];

export const DEFAULT_FALLBACKS: Record<FallbackCode, FallbackAction> = {
  MEMORY_DISABLED: "skip",
  SESSION_INVALID: "skip",
  INVALID_QUERY: "skip",
  COLLECTION_NOT_FOUND: "empty",
  RATE_LIMITED: "cache",
  ZEP_UNAVAILABLE: "skip",
  OPENMEMORY_UNAVAILABLE: "skip",
  LOCAL_UNAVAILABLE: "skip",
  /** A policy stage threw (a bug): never a 5xx, the request degrades like an unavailable backend. */
  POLICY_FAILED: "skip",
};

export const ZEP_SCOPES = ["edges", "episodes", "nodes", "thread_summaries"] as const;
/** `node_distance` is left out: it needs a center node the policy cannot supply per request. */
export const ZEP_RERANKERS = ["cross_encoder", "rrf", "mmr", "episode_mentions"] as const;

/** Numbers whose errors state the allowed range, so an ops team knows what to write instead. */
const int = (min: number, max: number) => {
  const error = `must be an integer from ${min} to ${max}`;
  return z.number({ error }).int({ error }).min(min, { error }).max(max, { error });
};
const fraction = () => {
  const error = "must be a number from 0 to 1";
  return z.number({ error }).min(0, { error }).max(1, { error });
};

function isValidTimeZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

const customPattern = z.union([
  z.string().min(1).max(1000).describe("A regular expression (RE2) whose matches are replaced."),
  z
    .object({
      name: z
        .string()
        .regex(/^[a-z][a-z0-9_]{0,39}$/, "lowercase letters, digits and _ (at most 40)")
        .describe(
          "The pattern's name: shown in explain (`redacted:<name>`) and counted as `custom` in metrics.",
        ),
      pattern: z
        .string()
        .min(1)
        .max(1000)
        .describe("A regular expression, compiled with RE2 (linear time; no lookaround or backreferences)."),
      flags: z
        .string()
        .regex(/^[imsu]*$/, "only the flags i, m, s, u")
        .optional()
        .describe("RE2 flags: any of i (case-insensitive), m (multi-line), s (dot matches newline), u."),
    })
    .strict(),
]);

export const retrievalSchema = z
  .object({
    topK: int(1, 20).default(8).describe("Memories kept after threshold and dedup, best score first (1–20)."),
    overfetch: int(1, 5)
      .default(2)
      .describe("Candidates fetched = topK × overfetch (capped by the backend's maximum, Zep 50)."),
    clipSentences: int(1, 5).default(2).describe("Sentences each memory is clipped to (1–5); see clip.mode."),
    maxTokens: int(100, 3000)
      .default(1500)
      .describe("The strict token budget of all kept memories, by the policy's tokenizer (100–3000)."),
    searchType: z
      .enum(SEARCH_TYPES)
      .default("hybrid")
      .describe("How the backend searches: hybrid, semantic or keyword."),
    minScore: fraction()
      .default(0.3)
      .describe("Candidates with a normalized score below this (0–1) are dropped."),
    maxQueryChars: int(1, 32768)
      .default(4000)
      .describe("A longer query is not searched (fallback INVALID_QUERY)."),
    /**
     * Backends that know the order of a session (the local store; Zep episodes, with one thread call) add, after
     * each candidate that asks a question, the turn that answers it (`replyTo`), on top of the fetch size.
     * Ignored by OpenMemory (no sessions).
     */
    replies: z
      .boolean()
      .default(false)
      .describe(
        "Add, after a candidate that asks a question, the turn that answers it (local store, Zep episodes).",
      ),
    /**
     * Which turns ask a question for `replies`: `end`, a turn whose text ends with a question mark; `anywhere`, one
     * with a question mark in any sentence ("I know! Which van company did you book? I need to tell the
     * building manager."), whose reply holds the answer as often. No default is filled in (unset = `end`), so a
     * policy without it keeps its hash and cache entries.
     */
    questionAt: z
      .enum(["end", "anywhere"])
      .optional()
      .describe(
        "For replies: a turn asks a question when its text ends with a question mark (end, when unset) or has one anywhere.",
      ),
    /**
     * Following turns: the local store adds, after each of the search's first `top` hits, the next `turns` turns
     * of its session, scored as that hit, on top of the fetch size (`origin: "reply"`, no `replyTo`). The answer
     * to what a turn brings up often follows it without repeating its words ("I've been asked to be an usher" …
     * "I bought a navy one from Marlow & Finch"), so a search never finds it. Absent = off (and the policy's hash
     * is what it was before this field existed). Zep brings them for the episodes of the one thread it reads
     * (the best-ranked episode's among the first `top`; the same single thread call as `replies`:
     * src/backends/zep/replies.ts). Ignored by OpenMemory (no sessions).
     */
    following: z
      .object({
        top: int(1, 20)
          .default(10)
          .describe("The search's first hits (1–20) whose following turns come along."),
        turns: int(1, 3).default(2).describe("Turns after each such hit (1–3), in its session's order."),
      })
      .strict()
      .optional()
      .describe(
        "Add, after each of the first top hits, the next turns of its session (local store; Zep: the one thread read). Absent = off.",
      ),
  })
  .strict();

export const interleavingSchema = z
  .object({
    strategy: z
      .enum(STRATEGIES)
      .default("alternate")
      .describe(
        "Order of the kept memories: alternate (score, then recency), score_first, recency_first or weighted.",
      ),
    /** For `weighted`: this many score picks, then one recency pick. */
    ratio: int(1, 10)
      .default(2)
      .describe("For weighted: this many score picks, then one recency pick (1–10)."),
  })
  .strict();

export const clipSchema = z
  .object({
    /**
     * `leading` (seed 000): the first `retrieval.clipSentences` sentences. `relevant`: the `clipSentences`
     * sentences that best match the query, in their original order, "..." where sentences were left out.
     * `off`: memories are kept whole (the budget still applies).
     */
    mode: z
      .enum(CLIP_MODES)
      .default("leading")
      .describe(
        "Which sentences are kept: leading (the first ones), relevant (best match to the query) or off.",
      ),
    /**
     * With `relevant`: a sentence holding the kind of answer the question asks for (a time for "when", a number
     * for "how many", a name for "who", a place for "where", a reason for "why") is preferred.
     */
    answerAware: z
      .boolean()
      .default(false)
      .describe(
        "With relevant: prefer a sentence holding the kind of answer the question asks for (time, number, name, place, reason).",
      ),
    /**
     * With `relevant`: each memory is clipped to at most this many tokens (the policy's tokenizer), best sentences
     * first, at least one sentence; a memory with fewer sentences than `clipSentences` is clipped too when longer.
     */
    maxTokensPerMemory: int(10, 1000)
      .optional()
      .describe("With relevant: each memory is clipped to at most this many tokens (10–1000)."),
    /**
     * With `relevant`: how much a sentence that holds an answer — the kind the question asks for, or a name, number
     * or quoted title the question does not say — weighs by itself, as a share of the memory's best match, when it
     * is next to a matching sentence (or nothing in the memory matches); half that further away. Unset: off.
     */
    answerNeighbour: z
      .number()
      .min(0)
      .max(2)
      .optional()
      .describe(
        "With relevant: weight (0–2, of the best match's score) of a sentence holding an answer (the kind asked for, or a name, number or title the question does not say) beside a matching sentence. Unset: off.",
      ),
    /** A memory written `Speaker: text` keeps its `Speaker: ` label when its first sentence is left out. */
    speakerLabel: z
      .boolean()
      .default(false)
      .describe("Keep a memory's `Speaker: ` label when its first sentence is left out."),
  })
  .strict();

/** Multi-signal ranking weights of one query intent (docs/policy.md#ranking). */
const weightsSchema = z
  .object({
    backend: fraction().default(0.3).describe("Weight of the backend's own score (0–1)."),
    lexical: fraction().default(0.35).describe("Weight of word overlap with the query (0–1)."),
    entity: fraction().default(0.2).describe("Weight of names and entities shared with the query (0–1)."),
    time: fraction().default(0.1).describe("Weight of recency and of the time the query asks about (0–1)."),
    answer: fraction()
      .default(0.05)
      .describe("Weight of holding the kind of answer the question asks for (0–1)."),
    type: fraction().default(0).describe("Weight of the memory type that suits the query's intent (0–1)."),
  })
  .strict();
const weightDefaults = (w: Partial<z.input<typeof weightsSchema>>) =>
  weightsSchema.default(weightsSchema.parse(w));

/** Default weights per intent (docs/policy.md#ranking): written once, used for each intent's own default and the whole. */
const INTENT_WEIGHTS = {
  factual: {},
  procedural: { backend: 0.4, lexical: 0.4, entity: 0.05, time: 0.05, answer: 0, type: 0.1 },
  exploratory: { backend: 0.35, lexical: 0.3, entity: 0.15, time: 0.1, answer: 0, type: 0.1 },
  analytical: { backend: 0.3, lexical: 0.3, entity: 0.1, time: 0.2, answer: 0.05, type: 0.05 },
} as const;
const intentWeightsSchema = z
  .object({
    factual: weightDefaults(INTENT_WEIGHTS.factual).describe(
      "Weights for factual questions (who, what, when).",
    ),
    procedural: weightDefaults(INTENT_WEIGHTS.procedural).describe("Weights for how-to questions."),
    exploratory: weightDefaults(INTENT_WEIGHTS.exploratory).describe(
      "Weights for open, exploratory questions.",
    ),
    analytical: weightDefaults(INTENT_WEIGHTS.analytical).describe(
      "Weights for analytical questions (why, compare, trends).",
    ),
  })
  .strict();

export const rankingSchema = z
  .object({
    /** Off by default: without it the order is seed 000's (threshold, dedup, topK by score, interleaving). */
    enabled: z
      .boolean()
      .default(false)
      .describe("Rank by several signals (docs/policy.md#ranking); off: seed 000's order by score."),
    /** Signal weights per query intent; each omitted weight takes its default. */
    weights: intentWeightsSchema
      .default(intentWeightsSchema.parse({}))
      .describe("Signal weights per query intent; each omitted weight takes its default."),
    /** MMR λ (seed 001): 1 = rank order only; lower trades relevance for difference from what is already kept. */
    diversity: fraction()
      .default(1)
      .describe("MMR λ (0–1): 1 = rank order only; lower trades relevance for difference from what is kept."),
    /**
     * The entity signal weighs each name the question mentions by (1 − the share of the candidates it is the speaker
     * of): the conversation's own speakers, in half the turns, stop outranking the memory that holds the answer; a
     * name only mentioned in the text ("Rotterdam") keeps its full weight.
     * Absent = off (and the policy's hash is what it was before this field existed).
     */
    entitySpecificity: z
      .boolean()
      .optional()
      .describe(
        "Weigh each name of the question by 1 - the share of candidates it speaks (the conversation's speakers count little).",
      ),
    /**
     * Conversational neighbours: a message gains `weight` × how far the best relevance among the messages of its
     * own session near it in time (decayed e^(−minutes apart / `minutes`), none beyond 3 × `minutes`) is above its
     * own — the turn that holds the answer sits beside the turn that repeats the question's words ("I've been asked
     * to be an usher" … "I bought a navy one from Marlow & Finch"). Absent = off (and the policy's hash is what it
     * was before this field existed).
     */
    neighbours: z
      .object({
        weight: fraction()
          .default(0.4)
          .describe("Share of the gap to the best neighbour's relevance gained (0–1)."),
        minutes: int(1, 1440)
          .default(15)
          .describe(
            "Time constant in minutes: a neighbour this far apart counts e^-1; beyond 3 × it, not at all.",
          ),
      })
      .strict()
      .optional()
      .describe(
        "A message gains weight × the gap to its best same-session neighbour's relevance, decayed by minutes apart. Absent = off.",
      ),
    /**
     * Dynamic K (seed 004): K = min + (max − min) × the question's complexity, instead of `retrieval.topK`.
     */
    dynamicK: z
      .object({
        enabled: z
          .boolean()
          .default(false)
          .describe("K from the question's complexity instead of retrieval.topK."),
        min: int(1, 50).default(4).describe("K for the simplest question (1–50)."),
        max: int(1, 50).default(16).describe("K for the most complex question (1–50)."),
      })
      .strict()
      .refine((d) => d.min <= d.max, { error: "min must not exceed max", path: ["min"] })
      .default({ enabled: false, min: 4, max: 16 })
      .describe("Dynamic K (seed 004): K = min + (max − min) × the question's complexity."),
    /**
     * Reinforcement (seed 001): how often each memory was kept before for this user, as one more signal. Off by
     * default; counts are read before ranking and incremented for the kept memories after a produced answer.
     * Absent = off (and the policy's hash is what it was before this section existed).
     */
    reinforcement: z
      .object({
        enabled: z
          .boolean()
          .default(false)
          .describe("Count how often each memory was kept before for the user, as one more signal."),
        /** Its weight beside the intent's weights (the same for every intent). */
        weight: fraction().default(0.15).describe("Its weight beside the intent's weights (0–1)."),
        /** Times kept at which the signal reaches 1: signal = min(1, ln(1 + n) / ln(1 + saturation)). */
        saturation: int(1, 1000).default(8).describe("Times kept at which the signal reaches 1."),
        /** A user's counts are forgotten this many days after their last increment. */
        ttlDays: int(1, 3650)
          .default(90)
          .describe("A user's counts are forgotten this many days after their last increment."),
      })
      .strict()
      .optional()
      .describe("Reinforcement (seed 001): memories kept before rank higher. Absent = off."),
  })
  .strict();

export const sufficiencySchema = z
  .object({
    /** Off by default: `metadata.sufficiency` is then absent. */
    enabled: z
      .boolean()
      .default(false)
      .describe("Judge whether the kept memories answer the question (`metadata.sufficiency`)."),
    /** Completeness at or above this is `sufficient`; at or above `insufficientBelow` `partial`. */
    threshold: fraction().default(0.6).describe("Completeness at or above this (0–1) is sufficient."),
    /** Completeness below this is `insufficient` (between it and `threshold`: `partial`). Absent: 60 % of `threshold`. */
    insufficientBelow: fraction()
      .optional()
      .describe(
        "Completeness below this is insufficient, between it and threshold partial; absent: 60 % of threshold.",
      ),
    /**
     * Below the threshold, one more search within the policy's backend deadline with `expandFactor` × the
     * candidates, merged and shaped again.
     */
    expand: z
      .boolean()
      .default(false)
      .describe("Below the threshold, search once more with expandFactor × the candidates and shape again."),
    expandFactor: int(2, 5)
      .default(2)
      .describe("How many times the candidates the expansion round fetches (2–5)."),
    /**
     * What the expansion round searches with (src/pipeline/expansion.ts): `more` the same question for
     * `expandFactor` × the candidates; `missing` the question's words the certificate lists as missing, for as many
     * candidates as the first search (no round when nothing is missing); `both` the missing words for `expandFactor`
     * × the candidates (nothing missing: as `more`). Absent: `more` (and the policy's hash is what it was).
     */
    expandWith: z
      .enum(EXPAND_WITH)
      .optional()
      .describe(
        "The expansion round searches with: more (the question, expandFactor × the candidates), missing (its missing words), both (missing words, expandFactor ×). Absent: more.",
      ),
    /**
     * The answer slot (src/pipeline/answer-slot.ts): a question asking for one of `kinds` whose focus term is kept
     * but with no answer of that kind in its sentence, the `after` sentences after it or (with `nextMemory`) the
     * first sentence of its reply turn kept right after it, is `insufficient`. Absent: not checked (as before).
     */
    answerSlot: z
      .object({
        kinds: z
          .array(z.enum(SLOT_KINDS))
          .min(1)
          .max(SLOT_KINDS.length)
          .describe("The kinds of answer checked (e.g. time, number, name, place)."),
        after: int(0, 3)
          .default(1)
          .describe("Sentences after the focus sentence that may hold the answer (0–3)."),
        nextMemory: z
          .boolean()
          .default(true)
          .describe("The first sentence of the reply turn kept right after may hold the answer."),
      })
      .strict()
      .optional()
      .describe(
        "The answer slot: a question whose focus is kept without the kind of answer it asks for is insufficient.",
      ),
  })
  .strict()
  .refine((d) => d.expandWith === undefined || d.expand, {
    error: "expandWith needs expand: true (it says what the expansion round searches with)",
    path: ["expandWith"],
  });

/** A share of the budget: more than 0, at most 1. */
const share = () => {
  const error = "must be a number greater than 0 and at most 1";
  return z.number({ error }).gt(0, { error }).max(1, { error });
};

/** Floating-point slack when adding shares (0.1 + 0.2 + 0.7 is 1.0000000000000002). */
const SHARE_SUM_SLACK = 1e-9;

export const sectionsSchema = z
  .object({
    summary: share().optional().describe("Share of retrieval.maxTokens for summaries (filled first)."),
    fact: share().optional().describe("Share of retrieval.maxTokens for facts (filled second)."),
    message: share()
      .optional()
      .describe("Share of retrieval.maxTokens for messages (filled last; gets what no share claims)."),
  })
  .strict()
  .superRefine((sections, ctx) => {
    const shares = SECTION_TYPES.flatMap((t) => (sections[t] === undefined ? [] : [sections[t]]));
    if (shares.length === 0)
      ctx.addIssue({ code: "custom", message: "name at least one of summary, fact, message" });
    // A share out of range has its own error; the sum is checked on valid shares only.
    if (shares.some((s) => !(s > 0 && s <= 1))) return;
    const sum = shares.reduce((a, b) => a + b, 0);
    if (sum > 1 + SHARE_SUM_SLACK)
      ctx.addIssue({
        code: "custom",
        message: `the shares must add up to at most 1 (they add up to ${sum})`,
      });
  });
export type BudgetSections = z.output<typeof sectionsSchema>;

/** `budget.relative`: spend at most `share` of what the backend's own first `topK` candidates, whole, would cost. */
export const relativeSchema = z
  .object({
    /** How many of the backend's first candidates T counts (20: "the backend's top 20, whole"). */
    topK: int(1, 50).default(20).describe("How many of the backend's first candidates T counts (1–50)."),
    /** The share of T the budget may spend: more than 0, at most 1. */
    share: share().describe("The share of T the budget may spend (more than 0, at most 1)."),
    /**
     * A floor under share × T (still at most `retrieval.maxTokens`): a user with only a few short memories keeps
     * room for them. Absent: no floor.
     */
    minTokens: int(0, 3000)
      .optional()
      .describe("A floor under share × T (still at most retrieval.maxTokens)."),
    /**
     * The share for a question of complexity 1 (seed 004's score, query analysis): the share then follows the
     * question, `share` + (complexShare − share) × complexity, so a multi-part question gets more of T and a
     * simple one less. Absent: `share` for every question.
     */
    complexShare: share()
      .optional()
      .describe("The share at complexity 1: share + (complexShare − share) × the question's complexity."),
  })
  .strict();
export type BudgetRelative = z.output<typeof relativeSchema>;

export const budgetSchema = z
  .object({
    /**
     * `truncate` (seed 000): memories are taken in order; the first that does not fit is cut with "..." and
     * nothing after it is included. `skip`: a memory that does not fit whole is left out and the next is tried.
     */
    packing: z
      .enum(PACKINGS)
      .default("truncate")
      .describe(
        "truncate: the first memory that does not fit is cut and nothing follows; skip: it is left out and the next is tried.",
      ),
    /**
     * false (seed 000): only the `topK` memories. true: after them, the over-fetched candidates beyond `topK`
     * (deduplicated, above `minScore`, best score first) while they fit, until there are `maxMemories`.
     */
    fill: z
      .boolean()
      .default(false)
      .describe("After the topK memories, add over-fetched candidates while they fit, up to maxMemories."),
    /** With `fill`: at most this many memories in all. */
    maxMemories: int(1, 50).default(20).describe("With fill: at most this many memories in all (1–50)."),
    /**
     * Section budgets (seed 004's allocation, seed 001's summaries first): each memory type's share of
     * `retrieval.maxTokens`, filled in the order summary → fact → message; what a section leaves unused flows to
     * the next, what no share claims goes to the last (messages). Absent (the default): one budget for all, as
     * before. No default is filled in, so a policy without it keeps its hash.
     */
    sections: sectionsSchema
      .optional()
      .describe(
        "Section budgets: each memory type's share of retrieval.maxTokens. Absent: one budget for all.",
      ),
    /**
     * Spend only what pays (seed 004, "tokens are a budget"): once `afterTokens` are spent, stop taking memories as
     * soon as the kept ones cover the question — the sufficiency certificate's completeness (computed on what is
     * kept so far) at or above `completeness`. Absent: the budget is filled as far as it goes (as before).
     */
    stop: z
      .object({
        afterTokens: int(0, 3000).describe("Tokens spent before the stop may apply."),
        completeness: fraction().describe("Stop once the kept memories' completeness reaches this (0–1)."),
      })
      .strict()
      .optional()
      .describe("Spend only what pays: stop taking memories once the kept ones cover the question."),
    /**
     * A budget relative to what the backend's own answer would cost (docs/policy.md#relative-budget): the request's
     * budget is min(`retrieval.maxTokens`, floor(`share` × T)), T the tokens (policy tokenizer) of the backend's
     * first `topK` candidates whole, in the order it returned them (reply turns it added not counted), as they
     * arrive (after the work bound, before any stage). Absent (the default): `retrieval.maxTokens` alone, as
     * before. No default is filled in, so a policy without it keeps its hash.
     */
    relative: relativeSchema
      .optional()
      .describe(
        "Budget = min(retrieval.maxTokens, floor(share × T)), T the tokens of the backend's first topK candidates whole.",
      ),
  })
  .strict();

export const redactionSchema = z
  .object({
    enabled: z
      .boolean()
      .default(false)
      .describe("Redact memories before anything is cached, logged or traced."),
    detectors: z
      .array(z.enum(DETECTORS))
      .max(DETECTORS.length)
      .default(["email", "ssn", "credit_card"])
      .describe("Built-in detectors to run (PII and secrets)."),
    patterns: z
      .array(customPattern)
      .max(50)
      .default([])
      .describe("Custom patterns (RE2), as strings or {name, pattern, flags}."),
    replacement: z.string().max(64).default("[REDACTED]").describe("What a match is replaced with."),
  })
  .strict();

export const injectionSchema = z
  .object({
    /** Off by default: a policy without `injection` shapes exactly as before. */
    enabled: z.boolean().default(false).describe("Screen recalled memories for instruction-like content."),
    detectors: z
      .array(z.enum(INJECTION_DETECTORS))
      .max(INJECTION_DETECTORS.length)
      .default([...INJECTION_DETECTORS])
      .describe("Injection detectors to run."),
    /** For every detector without an entry in `actions`. */
    action: z
      .enum(INJECTION_ACTIONS)
      .default("flag")
      .describe("What a firing detector does: flag, neutralize (replace what matched) or drop the memory."),
    actions: z
      .object(
        Object.fromEntries(
          INJECTION_DETECTORS.map((d) => [
            d,
            z
              .enum(INJECTION_ACTIONS)
              .optional()
              .describe(`The action of the ${d} detector (default: action).`),
          ]),
        ) as Record<
          InjectionDetectorName,
          z.ZodOptional<z.ZodEnum<{ flag: "flag"; neutralize: "neutralize"; drop: "drop" }>>
        >,
      )
      .strict()
      .default({})
      .describe("Per-detector actions, overriding action."),
  })
  .strict();

const fallbacksSchema = z
  .object(
    Object.fromEntries(
      FALLBACK_CODES.map((c) => [
        c,
        z
          .enum(FALLBACK_ACTIONS)
          .optional()
          .describe(`Action on ${c}: skip, empty or cache (default ${DEFAULT_FALLBACKS[c]}).`),
      ]),
    ) as Record<FallbackCode, z.ZodOptional<z.ZodEnum<{ skip: "skip"; empty: "empty"; cache: "cache" }>>>,
  )
  .strict()
  .default({})
  .transform((f) => ({ ...DEFAULT_FALLBACKS, ...stripUndefined(f) }));

function stripUndefined<T extends Record<string, unknown>>(o: T): Partial<T> {
  const out: Partial<T> = {};
  for (const [k, v] of Object.entries(o)) if (v !== undefined) (out as Record<string, unknown>)[k] = v;
  return out;
}

/** A policy name (file name stem): what the tenants file, requests and MEMGATE_SHADOW_POLICY name a policy by. */
export const POLICY_NAME = /^[a-z0-9][a-z0-9_.-]{0,63}$/;

export const policySchema = z
  .object({
    name: z
      .string()
      .regex(POLICY_NAME, "1–64 of a-z, 0-9, _ . - (starting with a letter or digit)")
      .describe("The policy's name: what requests and the tenants file name it by."),
    version: int(1, 1_000_000).describe(
      "Raise it with every change: a changed file with the same or a lower version is refused.",
    ),
    description: z.string().max(2000).optional().describe("For humans: what this policy is for."),
    backend: z
      .enum(BACKEND_NAMES)
      .optional()
      .describe("The backend to search; absent: the tenant's default backend."),
    retrieval: retrievalSchema
      .default(retrievalSchema.parse({}))
      .describe("What to fetch and keep: topK, threshold, clipping, the token budget."),
    interleaving: interleavingSchema
      .default(interleavingSchema.parse({}))
      .describe("The order of the kept memories."),
    clip: clipSchema
      .default(clipSchema.parse({}))
      .describe("How memories are clipped to retrieval.clipSentences sentences."),
    budget: budgetSchema
      .default(budgetSchema.parse({}))
      .describe("How memories are packed into retrieval.maxTokens."),
    ranking: rankingSchema
      .default(rankingSchema.parse({}))
      .describe("Multi-signal ranking (off by default)."),
    sufficiency: sufficiencySchema
      .default(sufficiencySchema.parse({}))
      .describe("Whether the kept memories answer the question (off by default)."),
    redaction: redactionSchema
      .default(redactionSchema.parse({}))
      .describe("PII and secrets redaction (off by default)."),
    injection: injectionSchema
      .default(injectionSchema.parse({}))
      .describe("Prompt-injection screening of recalled memories (off by default)."),
    tokenizer: z
      .enum(TOKENIZERS)
      .default("o200k_base")
      .describe("How tokens are counted: o200k_base, cl100k_base or approx (chars/4, undercounts CJK)."),
    fallbacks: fallbacksSchema.describe("The action per fallback code: skip, empty or cache."),
    cache: z
      .object({
        ttlSeconds: int(0, 86_400)
          .default(60)
          .describe("A cached payload is fresh this long (0 = not cached)."),
        staleSeconds: int(0, 604_800)
          .default(3600)
          .describe("After that, kept this long for the cache fallback (served as stale)."),
      })
      .strict()
      .default({ ttlSeconds: 60, staleSeconds: 3600 })
      .describe("The payload cache."),
    rateLimit: z
      .object({
        perUser: z
          .object({
            points: int(1, 1_000_000).default(30).describe("Retrievals per window."),
            durationSeconds: int(1, 86_400).default(60).describe("The window, in seconds."),
          })
          .strict()
          .default({ points: 30, durationSeconds: 60 })
          .describe("Each user's retrieval rate; beyond it, the RATE_LIMITED fallback."),
      })
      .strict()
      .default({ perUser: { points: 30, durationSeconds: 60 } })
      .describe("Rate limits of this policy."),
    timeouts: z
      .object({
        backendMs: int(50, 30_000)
          .default(1500)
          .describe("Deadline of the backend calls of one retrieval (ms)."),
      })
      .strict()
      .default({ backendMs: 1500 })
      .describe("Timeouts."),
    format: z
      .object({
        timeZone: z
          .string()
          .refine(isValidTimeZone, "an IANA time zone such as UTC or Europe/Paris")
          .default("UTC")
          .describe("IANA time zone of the timestamps in the system prompt."),
        /**
         * `none` (seed 000): the block alone. `tagged`: one line saying the memories are recalled data, not
         * instructions, then the block inside `<recalled_memories>` … `</recalled_memories>`.
         */
        envelope: z
          .enum(ENVELOPES)
          .default("none")
          .describe(
            "none: the block alone; tagged: inside <recalled_memories> with a line saying it is data, not instructions.",
          ),
        /**
         * `on`: each kept memory gets a ref (`m1`, `m2`, … in prompt order) in `memories[i].ref` and at the start of
         * its prompt line, and the payload a `citations` map; the refs' tokens count against the budget. `off` or
         * absent (seed 000): none. No default is filled in, so a policy without it keeps its hash.
         */
        citations: z
          .enum(CITATIONS)
          .optional()
          .describe("on: a ref per memory (m1, m2, …) in the prompt and a citations map in the payload."),
      })
      .strict()
      .default({ timeZone: "UTC", envelope: "none" })
      .describe("How the system prompt is formatted."),
    zep: z
      .object({
        scopes: z
          .array(z.enum(ZEP_SCOPES))
          .min(1)
          .max(ZEP_SCOPES.length)
          .default(["edges", "episodes"])
          .describe("What Zep searches: edges (facts), episodes, nodes, thread_summaries."),
        reranker: z.enum(ZEP_RERANKERS).default("cross_encoder").describe("Zep's reranker."),
        /**
         * true: the user's summary (Zep's user node, `GET /users/{userId}/node`) comes along as a `summary`
         * memory with score 1, fetched beside the search. Absent or false: not fetched, as before.
         */
        userSummary: z
          .boolean()
          .optional()
          .describe("Fetch the user's summary (Zep's user node) as a summary memory with score 1."),
      })
      .strict()
      .default({ scopes: ["edges", "episodes"], reranker: "cross_encoder" })
      .describe("Zep-specific search settings."),
  })
  .strict();

/** A policy as written in a file (before defaults). */
export type PolicyInput = z.input<typeof policySchema>;
/** A validated policy with every default filled in. */
export type Policy = z.output<typeof policySchema>;
export type CustomPattern = z.output<typeof customPattern>;

/**
 * Request `overrides` (docs/policy.md#overrides): seed 000's AdminMemorySettings subset, flat, validated against the
 * same ranges as the policy file.
 */
export const overridesSchema = z
  .object({
    topK: retrievalSchema.shape.topK.unwrap().optional(),
    clipSentences: retrievalSchema.shape.clipSentences.unwrap().optional(),
    maxTokens: retrievalSchema.shape.maxTokens.unwrap().optional(),
    searchType: z.enum(SEARCH_TYPES).optional(),
    minScore: retrievalSchema.shape.minScore.unwrap().optional(),
    enableRedaction: z.boolean().optional(),
    customRedactionPatterns: z.array(customPattern).max(50).optional(),
    interleaving: z
      .object({ strategy: z.enum(STRATEGIES), ratio: int(1, 10).optional() })
      .strict()
      .optional(),
    tokenizer: z.enum(TOKENIZERS).optional(),
    clip: z
      .object({ mode: z.enum(CLIP_MODES).optional() })
      .strict()
      .optional(),
    budget: z
      .object({
        packing: z.enum(PACKINGS).optional(),
        fill: z.boolean().optional(),
        maxMemories: budgetSchema.shape.maxMemories.unwrap().optional(),
      })
      .strict()
      .optional(),
  })
  .strict();
export type Overrides = z.output<typeof overridesSchema>;
