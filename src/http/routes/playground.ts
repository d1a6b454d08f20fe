/**
 * The policy playground's door (docs/playground.md; its API: docs/api.md#playground-api): the page at /ui (static files from dist/ui, built from
 * src/ui by `npm run build`) and its admin-scoped JSON API under /v1/playground. The API only translates: the
 * comparison and the eval run in the retrieval core (src/retrieval/service.ts `compare`, `evaluate`), the policy
 * text is checked as `memgate policy validate` checks a file (src/policy/compile.ts `checkPolicyText`).
 *
 * The page itself holds no data and needs no key (a browser sends no Authorization header on navigation); every
 * call it makes carries the admin key the user pasted, as `Authorization: Bearer <key>` — no cookies.
 */
import { join } from "node:path";
import express, { type Response, Router } from "express";
import { z } from "zod";
import type { LocalStores } from "../../compat/local-stores";
import { svgChart } from "../../eval/chart/svg";
import type { GoldenQuestion } from "../../eval/golden";
import { overallRows } from "../../eval/report";
import { sweepRows } from "../../eval/sweep-report";
import { checkPolicyText } from "../../policy/compile";
import type { PolicyRegistry } from "../../policy/registry-types";
import { BACKEND_NAMES, type BackendName } from "../../policy/schema";
import { EDITOR_FILE } from "../../retrieval/playground";
import { POLICY_NAME } from "../../retrieval/policy";
import { ID_PATTERN, ID_RULE } from "../../retrieval/request";
import type { RetrievalService } from "../../retrieval/service";
import { type ShadowRunner, summarize } from "../../rollout/shadow";
import { isPolicyAllowed } from "../../tenants/directory";
import type { TenantDirectory } from "../../tenants/types";
import { authenticate, principalOf, requireScope } from "../auth";
import { HttpProblem, toProblem } from "../errors";
import { jsonBody } from "../middleware";
import { refusalProblem } from "../outcome";
import { localsOf } from "../plain";
import { type KeyLimits, rateLimitKey } from "../rate-limit";
import { uiSecurityHeaders } from "../security-headers";
import { describeZodError } from "../validation";

export interface PlaygroundConfig {
  /** The built page: index.html, app.js, style.css (dist/ui). */
  uiDir: string;
  /** MEMGATE_PLAYGROUND_GOLDEN, loaded at boot: the eval table's questions (its file and users stay here). */
  golden?: { file: string; questions: readonly GoldenQuestion[] };
}

/** A policy text as the editor holds it: at most what a policy file reasonably is (UTF-16 code units). */
const MAX_POLICY_TEXT = 65_536;
/** A query, as /v1/retrieve takes one (UTF-16 code units). */
const MAX_QUERY = 65_536;

/**
 * A body limit (bytes) that fits every string field at its character cap, so a legal text is checked (an error
 * naming the field) instead of refused as too large: a UTF-16 unit takes at most 6 bytes of JSON (`\uXXXX`, as
 * a client escaping non-ASCII sends it; 3 bytes as UTF-8), plus room for the rest of the body.
 */
const bodyLimitFor = (...maxChars: number[]): string =>
  `${Math.ceil(maxChars.reduce((sum, n) => sum + 6 * n, 0) / 1024) + 4}kb`;
export const VALIDATE_BODY = bodyLimitFor(MAX_POLICY_TEXT);
export const COMPARE_BODY = bodyLimitFor(MAX_QUERY, MAX_POLICY_TEXT, MAX_POLICY_TEXT);
export const EVAL_BODY = bodyLimitFor(MAX_POLICY_TEXT, MAX_POLICY_TEXT);

const policyChoiceSchema = z
  .object({
    name: z.string({ error: "must be a policy name" }).regex(POLICY_NAME, "must be a policy name").optional(),
    text: z.string({ error: "must be a string (a policy file's text)" }).max(MAX_POLICY_TEXT).optional(),
  })
  .strict()
  .refine((c) => (c.name === undefined) !== (c.text === undefined), { error: "give either name or text" });

const policiesSchema = z
  .array(policyChoiceSchema, { error: "must be a list of one or two policies" })
  .min(1, { error: "must be a list of one or two policies" })
  .max(2, { error: "must be a list of one or two policies" });

export const compareBodySchema = z
  .object({
    userId: z.string({ error: "is required (a string)" }).regex(ID_PATTERN, ID_RULE),
    query: z.string({ error: "is required (a string)" }).max(MAX_QUERY),
    backend: z.enum(BACKEND_NAMES).optional(),
    policies: policiesSchema,
  })
  .strict();

/** At most this many budgets in one sweep (each one is another pass over the golden set per policy). */
const MAX_BUDGETS = 8;

export const evalBodySchema = z
  .object({
    backend: z.enum(BACKEND_NAMES).optional(),
    policies: policiesSchema,
    // Each budget is checked as the policies' retrieval.maxTokens by the core (the refusal names the policy).
    budgets: z
      .array(z.number({ error: "must be a list of token budgets (numbers)" }), {
        error: "must be a list of token budgets (numbers)",
      })
      .min(1, { error: "must list at least one budget" })
      .max(MAX_BUDGETS, { error: `must list at most ${MAX_BUDGETS} budgets` })
      .optional(),
  })
  .strict();

export const validateBodySchema = z
  .object({ text: z.string({ error: "is required (a policy file's text)" }).max(MAX_POLICY_TEXT) })
  .strict();

function parse<T>(schema: z.ZodType<T>, body: unknown): T {
  const parsed = schema.safeParse(body);
  if (!parsed.success) throw new HttpProblem("VALIDATION_FAILED", describeZodError(parsed.error));
  return parsed.data;
}

/** Whether the caller asked for the eval's progress as NDJSON lines. */
function streamsProgress(accept: string | undefined): boolean {
  return accept !== undefined && /\bapplication\/x-ndjson\b/i.test(accept);
}

/**
 * Writes `{"progress":{"done":n,"total":N}}` lines (the 200 and its content type go out with the first one), at
 * most one per percent of the questions, and always the last one.
 */
function progressWriter(res: Response): (done: number, total: number) => void {
  let last = -1;
  return (done, total) => {
    if (res.writableEnded || res.destroyed) return;
    const step = Math.max(1, Math.floor(total / 100));
    if (done !== total && done - last < step) return;
    if (done === last) return;
    last = done;
    if (!res.headersSent) {
      res.status(200);
      res.setHeader("content-type", "application/x-ndjson; charset=utf-8");
      res.setHeader("cache-control", "no-store");
    }
    res.write(`${JSON.stringify({ progress: { done, total } })}\n`);
  };
}

/** The users of the tenant's embedded local store (dev mode), at most 200. */
function devUsers(stores: LocalStores | undefined, tenantId: string): string[] {
  return stores?.get(tenantId)?.users().slice(0, 200) ?? [];
}

export function playgroundRoutes(deps: {
  tenants: TenantDirectory;
  policies: PolicyRegistry;
  retrieval: RetrievalService;
  keyLimits?: KeyLimits;
  playground: PlaygroundConfig;
  shadow?: ShadowRunner;
  /** The embedded local stores: in dev mode the page lists their users. */
  localStores?: LocalStores | undefined;
}): Router {
  const router = Router();
  const { uiDir, golden } = deps.playground;

  // The page: its own content security policy (scripts, styles and fetches from this origin only).
  const page = express.static(uiDir, {
    index: false,
    redirect: false,
    dotfiles: "ignore",
    fallthrough: true,
  });
  router.use("/ui", uiSecurityHeaders());
  router.get(["/ui", "/ui/"], function playgroundPage(_req, res) {
    res.setHeader("cache-control", "no-cache");
    res.sendFile(join(uiDir, "index.html"));
  });
  // Whether any key works (dev mode): the page asks before it has a key, to say so. Nothing else, no key needed.
  router.get("/ui/mode", function playgroundMode(_req, res) {
    res.setHeader("cache-control", "no-store");
    res.json({ devMode: deps.tenants.devMode });
  });
  router.use("/ui", page);

  const admin = [authenticate(deps.tenants), rateLimitKey(deps.keyLimits), requireScope("admin")];

  /** What the page offers for this key's tenant: its backends, its policies, the golden set. */
  router.get("/v1/playground", ...admin, function playgroundInfo(_req, res) {
    const { tenant } = principalOf(res);
    const backends = BACKEND_NAMES.filter((b) => tenant.backends[b] !== undefined);
    const policies = deps.policies
      .list()
      .policies.filter((p) => p.status === "active" && isPolicyAllowed(tenant, p.name))
      .map((p) => ({ name: p.name, version: p.version, hash: p.hash }));
    res.json({
      tenant: tenant.id,
      backends,
      defaultBackend: tenant.defaultBackend,
      policies,
      defaultPolicy: tenant.policies.default,
      editorFile: EDITOR_FILE,
      // Whether there is one and its size only: its file is the server's, its users may be other tenants'.
      golden: golden === undefined ? null : { questions: golden.questions.length },
      // Dev mode (no tenants file): any key works, and the page offers the local store's users to pick from.
      devMode: deps.tenants.devMode,
      users: deps.tenants.devMode ? devUsers(deps.localStores, tenant.id) : [],
    });
  });

  /**
   * The live shadow report of this key's tenant (docs/rollouts.md#shadow): the recent shadow runs in this process,
   * tokens, overlap, what each side drops most. `rule: null` when the tenant has no shadow policy.
   */
  router.get("/v1/playground/shadow", ...admin, function shadowReport(_req, res) {
    const { tenant } = principalOf(res);
    const rule = tenant.policies.shadow;
    const report =
      deps.shadow?.report(tenant.id, rule) ??
      summarize(tenant.id, rule, [], { ran: 0, dropped: 0, error: 0 }, 0);
    res.setHeader("cache-control", "no-store");
    res.json(report);
  });

  /** `memgate policy validate` on the editor's text: 200 with its lines, ok or not. */
  router.post("/v1/playground/validate", ...admin, jsonBody(VALIDATE_BODY), function validate(req, res) {
    const { text } = parse(validateBodySchema, req.body);
    const checked = checkPolicyText(text, EDITOR_FILE);
    if (!checked.ok) {
      res.json({ ok: false, lines: checked.lines });
      return;
    }
    const { policy, hash } = checked.compiled;
    res.json({
      ok: true,
      lines: [checked.line],
      policy: { name: policy.name, version: policy.version, hash },
    });
  });

  router.post("/v1/playground/compare", ...admin, jsonBody(COMPARE_BODY), async function compare(req, res) {
    const body = parse(compareBodySchema, req.body);
    const controller = new AbortController();
    const onClose = () => {
      if (!res.writableFinished) controller.abort();
    };
    res.on("close", onClose);
    try {
      const outcome = await deps.retrieval.compare({
        principal: principalOf(res),
        userId: body.userId,
        query: body.query,
        backend: body.backend as BackendName | undefined,
        policies: body.policies,
        signal: controller.signal,
      });
      if (outcome.kind === "refused") throw refusalProblem(outcome);
      res.json(outcome.comparison);
    } finally {
      res.off("close", onClose);
    }
  });

  router.post("/v1/playground/eval", ...admin, jsonBody(EVAL_BODY), async function evaluate(req, res) {
    const body = parse(evalBodySchema, req.body);
    if (golden === undefined) {
      throw new HttpProblem("NOT_FOUND", "no golden set configured (set MEMGATE_PLAYGROUND_GOLDEN)");
    }
    // A closed tab (or the page's Cancel) stops the run: no more searches go out (as `compare` stops its one).
    const controller = new AbortController();
    const onClose = () => {
      if (!res.writableFinished) controller.abort();
    };
    res.on("close", onClose);
    // `Accept: application/x-ndjson`: progress lines while the searches run, then the answer (docs/api.md#playground-api).
    const stream = streamsProgress(req.get("accept"));
    const progress = stream ? progressWriter(res) : undefined;
    try {
      const outcome = await deps.retrieval.evaluate({
        principal: principalOf(res),
        backend: body.backend,
        policies: body.policies,
        questions: golden.questions,
        budgets: body.budgets,
        signal: controller.signal,
        onProgress: progress,
      });
      if (outcome.kind === "refused") {
        const problem = refusalProblem(outcome);
        // Refusals come before any search, so before any progress line: a plain problem answer.
        if (!res.headersSent) throw problem;
        res.end(
          `${JSON.stringify({ problem: toProblem(problem.code, problem.message, localsOf(res).requestId ?? "") })}\n`,
        );
        return;
      }
      const { sweep } = outcome.evaluation;
      const answer = {
        ...outcome.evaluation,
        table: overallRows(outcome.evaluation.reports),
        // The chart as `memgate eval --chart` writes it (the page shows it as an image), and its figures.
        ...(sweep === undefined ? {} : { sweepTable: sweepRows(sweep), chart: svgChart(sweep) }),
      };
      if (!stream) res.json(answer);
      else {
        progress?.(outcome.evaluation.questions, outcome.evaluation.questions);
        res.end(`${JSON.stringify({ result: answer })}\n`);
      }
    } finally {
      res.off("close", onClose);
    }
  });

  return router;
}
