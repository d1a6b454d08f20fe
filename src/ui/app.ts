/**
 * The policy playground page (served at /ui from dist/ui; README "Policy playground"). Plain DOM, no framework,
 * no inline script or style (the page's CSP allows only its own files): every call goes to the admin API under
 * /v1/playground with the key the user pasted, as `Authorization: Bearer <key>`. The keys live in this tab's
 * sessionStorage, one per tenant, and nowhere else.
 */
import type {
  Comparison,
  EvalAnswer,
  Memory,
  PlaygroundInfo,
  Problem,
  Run,
  StageTrace,
  TraceChange,
  Validation,
} from "./wire.js";

const KEYS_STORAGE = "memgate.playground.keys";
/** A policy select's value for "the editor's text". */
const EDITOR = "@editor";
const SAMPLE_POLICY = `# A policy to try: edit it, then pick "editor" as policy A or B.
name: playground
version: 1
retrieval:
  topK: 4
  minScore: 0.5
  clipSentences: 2
clip:
  mode: relevant
redaction:
  enabled: true
  detectors: [email, phone, credit_card]
tokenizer: approx
`;

function byId<T extends HTMLElement>(id: string, type: { new (): T }): T {
  const el = document.getElementById(id);
  if (!(el instanceof type)) throw new Error(`the page has no #${id}`);
  return el;
}

const ui = {
  keyForm: byId("key-form", HTMLFormElement),
  key: byId("key", HTMLInputElement),
  tenant: byId("tenant", HTMLSelectElement),
  forget: byId("key-forget", HTMLButtonElement),
  status: byId("status", HTMLParagraphElement),
  form: byId("compare-form", HTMLFormElement),
  user: byId("user", HTMLInputElement),
  query: byId("query", HTMLInputElement),
  backend: byId("backend", HTMLSelectElement),
  policyA: byId("policy-a", HTMLSelectElement),
  policyB: byId("policy-b", HTMLSelectElement),
  compare: byId("compare", HTMLButtonElement),
  text: byId("policy-text", HTMLTextAreaElement),
  validation: byId("validation", HTMLOutputElement),
  results: byId("results", HTMLElement),
  summary: byId("summary", HTMLParagraphElement),
  runs: byId("runs", HTMLDivElement),
  evalSection: byId("eval", HTMLElement),
  evalAbout: byId("eval-about", HTMLParagraphElement),
  evalRun: byId("eval-run", HTMLButtonElement),
  evalBudgets: byId("eval-budgets", HTMLInputElement),
  evalResult: byId("eval-result", HTMLDivElement),
};

// --- small DOM helpers (textContent only: nothing the API answers is ever parsed as HTML) ---

type Child = Node | string | null | undefined | false;

function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: { class?: string; text?: string; attrs?: Record<string, string> } = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  if (props.class !== undefined) el.className = props.class;
  if (props.text !== undefined) el.textContent = props.text;
  for (const [k, v] of Object.entries(props.attrs ?? {})) el.setAttribute(k, v);
  for (const c of children) if (c !== null && c !== undefined && c !== false) el.append(c);
  return el;
}

/** A horizontal bar: one segment per part, widths as shares of `total` (set through CSSOM, allowed by the CSP). */
function bar(parts: readonly number[], total: number, label: string): HTMLElement {
  const el = h("div", { class: "bar", attrs: { role: "img", "aria-label": label } });
  parts.forEach((part, i) => {
    const seg = h("span", { class: i % 2 === 1 ? "alt" : "" });
    seg.style.width = `${total > 0 ? Math.min(100, (part / total) * 100) : 0}%`;
    el.append(seg);
  });
  return el;
}

function setStatus(text: string, error = false): void {
  ui.status.textContent = text;
  ui.status.classList.toggle("error", error);
}

// --- the API ---

class ApiError extends Error {}

function keys(): Record<string, string> {
  try {
    const parsed: unknown = JSON.parse(sessionStorage.getItem(KEYS_STORAGE) ?? "{}");
    return parsed !== null && typeof parsed === "object" ? (parsed as Record<string, string>) : {};
  } catch {
    return {};
  }
}

function currentKey(): string | undefined {
  return keys()[ui.tenant.value];
}

async function api<T>(path: string, key: string, body?: unknown): Promise<T> {
  const init: RequestInit = {
    method: body === undefined ? "GET" : "POST",
    headers: {
      authorization: `Bearer ${key}`,
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    credentials: "omit",
    cache: "no-store",
  };
  if (body !== undefined) init.body = JSON.stringify(body);
  let res: Response;
  try {
    res = await fetch(path, init);
  } catch {
    throw new ApiError("the gateway did not answer");
  }
  const json: unknown = await res.json().catch(() => undefined);
  if (!res.ok) {
    const problem = json as Partial<Problem> | undefined;
    throw new ApiError(`${res.status} ${problem?.code ?? ""}: ${problem?.detail ?? res.statusText}`.trim());
  }
  return json as T;
}

// --- connection: keys per tenant ---

let info: PlaygroundInfo | undefined;

function fillTenants(selected: string | undefined): void {
  const tenants = Object.keys(keys()).sort();
  ui.tenant.replaceChildren(...tenants.map((t) => h("option", { text: t, attrs: { value: t } })));
  ui.tenant.disabled = tenants.length === 0;
  if (selected !== undefined) ui.tenant.value = selected;
}

function options(select: HTMLSelectElement, values: Array<[string, string]>, preferred: string[]): void {
  const before = select.value;
  select.replaceChildren(...values.map(([value, text]) => h("option", { text, attrs: { value } })));
  const wanted = [before, ...preferred].find((v) => values.some(([value]) => value === v));
  if (wanted !== undefined) select.value = wanted;
}

function applyInfo(next: PlaygroundInfo): void {
  info = next;
  options(
    ui.backend,
    next.backends.map((b) => [b, b]),
    [next.defaultBackend],
  );
  const names: Array<[string, string]> = next.policies.map((p) => [p.name, `${p.name} v${p.version}`]);
  options(ui.policyA, [...names, [EDITOR, "editor (the text below)"]], [next.defaultPolicy]);
  const other = next.policies.find((p) => p.name !== next.defaultPolicy)?.name ?? "";
  options(ui.policyB, [["", "— none —"], ...names, [EDITOR, "editor (the text below)"]], [other]);
  ui.evalSection.hidden = next.golden === null;
  if (next.golden !== null) {
    ui.evalAbout.textContent = `${next.golden.questions} questions from the configured golden set; candidates fetched from the selected backend.`;
  }
  setStatus(
    `Tenant ${next.tenant}: ${next.policies.length} policies, backends ${next.backends.join(", ") || "none"}.`,
  );
  validateSoon(0);
}

async function connect(key: string): Promise<void> {
  setStatus("Checking the key…");
  try {
    const got = await api<PlaygroundInfo>("/v1/playground", key);
    sessionStorage.setItem(KEYS_STORAGE, JSON.stringify({ ...keys(), [got.tenant]: key }));
    fillTenants(got.tenant);
    applyInfo(got);
    ui.key.value = "";
  } catch (err) {
    setStatus(err instanceof Error ? err.message : String(err), true);
  }
}

ui.keyForm.addEventListener("submit", (event) => {
  event.preventDefault();
  const key = ui.key.value.trim();
  if (key === "") {
    setStatus("key: paste an admin API key first", true);
    ui.key.focus();
    return;
  }
  void connect(key);
});

ui.tenant.addEventListener("change", () => {
  const key = currentKey();
  if (key !== undefined) void connect(key);
});

ui.forget.addEventListener("click", () => {
  sessionStorage.removeItem(KEYS_STORAGE);
  info = undefined;
  fillTenants(undefined);
  setStatus("Keys forgotten.");
});

// --- the policy editor, validated as `memgate policy validate` validates a file ---

let validateTimer: number | undefined;
let validateSeq = 0;

function validateSoon(delay = 250): void {
  window.clearTimeout(validateTimer);
  validateTimer = window.setTimeout(() => void validate(), delay);
}

async function validate(): Promise<void> {
  const key = currentKey();
  if (key === undefined) {
    ui.validation.textContent = "Paste an admin key to validate the policy text.";
    ui.validation.className = "";
    return;
  }
  const seq = ++validateSeq;
  try {
    const answer = await api<Validation>("/v1/playground/validate", key, { text: ui.text.value });
    if (seq !== validateSeq) return;
    ui.validation.textContent = answer.lines.join("\n");
    ui.validation.className = answer.ok ? "ok" : "invalid";
  } catch (err) {
    if (seq !== validateSeq) return;
    ui.validation.textContent = err instanceof Error ? err.message : String(err);
    ui.validation.className = "invalid";
  }
}

ui.text.addEventListener("input", () => validateSoon());

// --- the comparison ---

function choice(value: string): { name: string } | { text: string } | undefined {
  if (value === "") return undefined;
  return value === EDITOR ? { text: ui.text.value } : { name: value };
}

function chosenPolicies(): Array<{ name: string } | { text: string }> {
  return [choice(ui.policyA.value), choice(ui.policyB.value)].filter((c) => c !== undefined);
}

ui.form.addEventListener("submit", (event) => {
  event.preventDefault();
  void compare();
});

async function compare(): Promise<void> {
  const key = currentKey();
  if (key === undefined || info === undefined) {
    setStatus("key: paste an admin API key first", true);
    ui.key.focus();
    return;
  }
  ui.compare.disabled = true;
  setStatus("Comparing…");
  try {
    const answer = await api<Comparison>("/v1/playground/compare", key, {
      userId: ui.user.value.trim(),
      query: ui.query.value,
      ...(ui.backend.value === "" ? {} : { backend: ui.backend.value }),
      policies: chosenPolicies(),
    });
    render(answer);
    setStatus(`Compared ${answer.runs.length} polic${answer.runs.length === 1 ? "y" : "ies"}.`);
  } catch (err) {
    setStatus(err instanceof Error ? err.message : String(err), true);
  } finally {
    ui.compare.disabled = false;
  }
}

function render(c: Comparison): void {
  ui.results.hidden = false;
  ui.summary.replaceChildren(
    `${c.fetched} candidate(s) from ${c.backend} for user ${c.userId} (tenant ${c.tenant}), the same for every policy.`,
  );
  if (c.fallback !== null) {
    ui.summary.append(
      h("span", { class: "fallback", text: ` Fallback ${c.fallback.code}: ${c.fallback.message}.` }),
    );
  }
  ui.runs.replaceChildren(...c.runs.map(renderRun));
}

/** Every stage's change of one memory, in stage order. */
function changesById(
  trace: readonly StageTrace[],
): Map<string, Array<{ stage: StageTrace; change: TraceChange }>> {
  const out = new Map<string, Array<{ stage: StageTrace; change: TraceChange }>>();
  for (const stage of trace) {
    for (const change of stage.changes) {
      const list = out.get(change.id) ?? [];
      list.push({ stage, change });
      out.set(change.id, list);
    }
  }
  return out;
}

const DROPS = new Set([
  "below_min_score",
  "beyond_topK",
  "beyond_maxMemories",
  "dropped_by_budget",
  "not_needed",
]);

function isDrop(reason: string): boolean {
  return DROPS.has(reason) || reason.startsWith("duplicate_of:") || reason.endsWith(":drop");
}

/** The reason code as the trace has it, with what it means here. */
function explainChange(stage: StageTrace, change: TraceChange, score: number | undefined): string {
  const { reason } = change;
  const d = stage.detail ?? {};
  if (reason === "below_min_score")
    return `below_min_score: score ${score?.toFixed(2) ?? "?"} < minScore ${d.minScore}`;
  if (reason.startsWith("duplicate_of:")) return `${reason}: the same memory as ${reason.slice(13)}`;
  if (reason === "beyond_topK") return `beyond_topK: after the ${d.topK ?? "topK"} best`;
  if (reason === "beyond_maxMemories") return "beyond_maxMemories: budget.maxMemories reached";
  if (reason === "dropped_by_budget") return `dropped_by_budget: does not fit ${d.maxTokens} tokens`;
  if (reason === "not_needed")
    return `not_needed: the kept memories already cover the question (completeness ${d.completeness} ≥ budget.stop)`;
  if (reason === "truncated_by_budget") return `truncated_by_budget: cut to fit ${d.maxTokens} tokens`;
  if (reason === "clipped" && change.sentences !== undefined) {
    const kept = change.sentences.kept
      .map((k) => `#${k.sentence} (${k.why}${k.terms?.length ? `: ${k.terms.join(", ")}` : ""})`)
      .join(", ");
    return `clipped: kept sentence ${kept} of ${change.sentences.total}`;
  }
  return reason;
}

// --- the ranking view: per memory its signals, the query analysis, the sufficiency certificate ---

/** The rank stage's signals, in the order the page shows them (docs/policy.md#ranking). */
const SIGNAL_COLUMNS = ["backend", "lexical", "entity", "time", "answer", "type", "reinforcement"] as const;

/** Column headers too wide for a run's column (the full name is the header's title). */
const SHORT: Record<string, string> = { reinforcement: "reinf.", relevance: "relev." };

const num = (x: number | undefined, digits = 2): string => (x === undefined ? "—" : x.toFixed(digits));

/** What the question asks, as the query analysis read it (the rank stage's detail), and what the context covers. */
function renderAnalysis(payload: Run["payload"], rank: StageTrace | undefined): HTMLElement {
  const d = rank?.detail ?? {};
  const rows: Array<[string, string]> = [];
  if (rank !== undefined) {
    rows.push(
      ["intent", String(d.intent ?? "—")],
      ["answer type", String(d.answerType ?? "—")],
      ["entities", typeof d.entities === "string" && d.entities !== "" ? d.entities : "none"],
      ["time scope", typeof d.timeScope === "string" ? d.timeScope : "none"],
      ["complexity", typeof d.complexity === "number" ? d.complexity.toFixed(2) : "—"],
    );
  }
  const { reinforcement, sufficiency } = payload.metadata;
  if (reinforcement !== undefined)
    rows.push(["reinforcement counts", reinforcement.available ? "available" : "unavailable (signal 0)"]);
  if (sufficiency !== undefined) {
    rows.push(
      ["sufficiency", `${sufficiency.verdict}${sufficiency.expanded ? " (after an expansion round)" : ""}`],
      ["completeness", sufficiency.completeness.toFixed(2)],
      ["redundancy", sufficiency.redundancy.toFixed(2)],
      ["missing", sufficiency.missing.length === 0 ? "nothing" : sufficiency.missing.join(", ")],
    );
  }
  if (rows.length === 0)
    return h("p", {
      class: "muted analysis",
      text: "No query analysis: this policy neither ranks nor certifies sufficiency (ranking.enabled, sufficiency.enabled are off).",
    });
  return h(
    "dl",
    { class: "analysis" },
    ...rows.flatMap(([term, value]) => [h("dt", { text: term }), h("dd", { text: value })]),
  );
}

/** One row per candidate the rank stage saw: its signals, relevance, and whether it was kept (else where it went). */
function renderSignals(
  run: Run,
  rank: StageTrace | undefined,
  kept: ReadonlyMap<string, Memory>,
  changes: ReturnType<typeof changesById>,
): HTMLElement {
  const ranking = rank?.ranking;
  if (ranking === undefined)
    return h("p", { class: "muted", text: "No ranking signals: ranking.enabled is off (seed 000's order)." });
  const columns = SIGNAL_COLUMNS.filter(
    (name) => name !== "reinforcement" || ranking.some((r) => r.signals.reinforcement !== undefined),
  );
  const outcome = (id: string): HTMLElement => {
    if (kept.has(id)) return h("span", { class: "state-kept", text: "kept" });
    const drop = (changes.get(id) ?? []).find(({ change }) => isDrop(change.reason));
    return h("span", {
      class: "state-dropped",
      text: drop === undefined ? "dropped" : `dropped by ${drop.stage.stage}: ${drop.change.reason}`,
    });
  };
  const rows = ranking.map((r) =>
    h(
      "tr",
      { attrs: { "data-id": r.id, "data-state": kept.has(r.id) ? "kept" : "dropped" } },
      h("td", {}, h("code", { text: r.id })),
      h("td", { text: String(r.rank) }),
      h("td", { class: "num strong", text: num(r.relevance, 3) }),
      h("td", {}, outcome(r.id)),
      ...columns.map((name) => h("td", { class: "num", text: num(r.signals[name]) })),
    ),
  );
  // Scrolls sideways inside the run's column when the two runs sit side by side.
  const scroller = h("div", { class: "scroll" });
  const table = h(
    "table",
    { class: "signals", attrs: { "aria-label": `${run.label}: ranking signals per memory` } },
    h(
      "thead",
      {},
      h(
        "tr",
        {},
        ...["memory", "rank", "relevance", "outcome", ...columns].map((t) =>
          h("th", { text: SHORT[t] ?? t, attrs: { scope: "col", title: t } }),
        ),
      ),
    ),
    h("tbody", {}, ...rows),
  );
  scroller.append(table);
  return scroller;
}

function renderRun(run: Run): HTMLElement {
  const { payload } = run;
  const trace = payload.trace ?? [];
  const kept = new Map<string, Memory>(payload.memories.map((m) => [m.id, m]));
  const changes = changesById(trace);
  const rankStage = trace.find((s) => s.stage === "rank");
  const widest = Math.max(1, ...trace.map((s) => s.in));

  const funnel = h(
    "ol",
    { class: "funnel", attrs: { "aria-label": `${run.label}: stages, memories in and out` } },
    ...trace.map((s) =>
      h(
        "li",
        {},
        h("span", { text: s.stage }),
        bar([s.out, s.in - s.out], widest, `${s.stage}: ${s.in} in, ${s.out} out`),
        h("span", { text: `${s.in} → ${s.out}` }),
      ),
    ),
  );

  const used = payload.metadata.totalTokens;
  const tokens = h(
    "div",
    { class: "tokens" },
    bar(
      run.tokens.map((t) => t.tokens),
      run.maxTokens,
      `${used} of ${run.maxTokens} tokens used`,
    ),
    h("p", {
      text: `${used} / ${run.maxTokens} tokens (${run.tokenizer}), ${Math.round((used / run.maxTokens) * 100)} % of the budget; one segment per kept memory.`,
    }),
  );

  const tags: HTMLElement[] = [];
  for (const stage of trace) {
    for (const c of stage.changes) {
      if (c.reason.startsWith("redacted:"))
        tags.push(h("span", { class: "tag redaction", text: `${c.id} ${c.reason}` }));
      if (c.reason.startsWith("injection:"))
        tags.push(h("span", { class: "tag injection", text: `${c.id} ${c.reason}` }));
    }
  }

  const rows = run.candidates.map((cand) => {
    const memory = kept.get(cand.id);
    const list = changes.get(cand.id) ?? [];
    const dropped = memory === undefined;
    const state = dropped ? "dropped" : list.length > 0 ? "changed" : "kept";
    const why =
      list.length === 0
        ? h("span", { class: "muted", text: "kept as is" })
        : h(
            "ul",
            { class: "reasons" },
            ...list.map(({ stage, change }) =>
              h("li", {
                class: isDrop(change.reason) ? "error" : "",
                text: `${stage.stage}: ${explainChange(stage, change, cand.score)}`,
              }),
            ),
          );
    return h(
      "tr",
      { attrs: { "data-id": cand.id, "data-state": state } },
      h("td", {}, h("code", { text: cand.id })),
      h("td", { text: cand.score.toFixed(2) }),
      h("td", {}, h("div", { class: `state-${state}`, text: state }), why),
      h("td", { class: dropped ? "muted" : "", text: memory?.content ?? cand.content }),
    );
  });
  const table = h(
    "table",
    { class: "memories" },
    h("caption", {
      class: "muted",
      text: `${run.candidates.length} candidates in, ${payload.memories.length} kept`,
    }),
    h(
      "thead",
      {},
      h(
        "tr",
        {},
        ...["memory", "score", "state and why", "content (as this policy leaves it)"].map((t) =>
          h("th", { text: t, attrs: { scope: "col" } }),
        ),
      ),
    ),
    h("tbody", {}, ...rows),
  );

  const fallback = payload.metadata.fallback;
  return h(
    "article",
    { class: "run", attrs: { "aria-label": `policy ${run.label}` } },
    h(
      "h3",
      {},
      run.label,
      " ",
      h("span", {
        class: "hash",
        text: `v${payload.metadata.policy.version} · ${payload.metadata.policy.hash.slice(0, 12)}`,
      }),
    ),
    fallback === null
      ? null
      : h("p", {
          class: "fallback",
          text: `Fallback ${fallback.code} (${fallback.action}): ${fallback.message}`,
        }),
    h("h4", { text: "Stages (memories in → out)" }),
    funnel,
    h("h4", { text: "Token budget" }),
    tokens,
    h("h4", { text: "Redactions and injection flags" }),
    tags.length === 0 ? h("p", { class: "muted", text: "none" }) : h("p", {}, ...tags),
    h("h4", { text: "Query analysis and sufficiency" }),
    renderAnalysis(payload, rankStage),
    h("h4", { text: "Ranking signals" }),
    h("p", {
      class: "muted note",
      text: "Each signal in [0, 1] (— : the question gives it nothing); relevance is their weighted mean for the question's intent.",
    }),
    renderSignals(run, rankStage, kept, changes),
    h("h4", { text: "Memories" }),
    table,
    h("h4", { text: "System prompt" }),
    h("pre", { class: "prompt", text: payload.systemPrompt === "" ? "(empty)" : payload.systemPrompt }),
  );
}

// --- the golden set ---

ui.evalRun.addEventListener("click", () => void runEval());

async function runEval(): Promise<void> {
  const key = currentKey();
  if (key === undefined) return;
  ui.evalRun.disabled = true;
  ui.evalResult.replaceChildren(h("p", { text: "Running…" }));
  // "300, 450,800" → [300, 450, 800]; the server checks each as a policy's retrieval.maxTokens.
  const budgets = ui.evalBudgets.value
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "")
    .map(Number);
  try {
    const answer = await api<EvalAnswer>("/v1/playground/eval", key, {
      ...(ui.backend.value === "" ? {} : { backend: ui.backend.value }),
      policies: chosenPolicies(),
      ...(budgets.length === 0 ? {} : { budgets }),
    });
    ui.evalResult.replaceChildren(
      figuresTable(
        answer.table,
        `${answer.questions} questions, ${answer.users} user(s), backend ${answer.backend}${answer.failed > 0 ? `; ${answer.failed} search(es) failed` : ""}`,
      ),
    );
    if (answer.sweepTable !== undefined) {
      ui.evalResult.append(
        h("h3", { text: "Quality against tokens" }),
        figuresTable(answer.sweepTable, "each policy at each token budget (retrieval.maxTokens)"),
      );
    }
    if (answer.chart !== undefined) ui.evalResult.append(chartImage(answer.chart));
  } catch (err) {
    ui.evalResult.replaceChildren(
      h("p", { class: "error", text: err instanceof Error ? err.message : String(err) }),
    );
  } finally {
    ui.evalRun.disabled = false;
  }
}

function figuresTable(table: { header: string[]; rows: string[][] }, caption: string): HTMLTableElement {
  return h(
    "table",
    { class: "eval" },
    h("caption", { text: caption }),
    h("thead", {}, h("tr", {}, ...table.header.map((t) => h("th", { text: t, attrs: { scope: "col" } })))),
    h("tbody", {}, ...table.rows.map((r) => h("tr", {}, ...r.map((cell) => h("td", { text: cell }))))),
  );
}

/**
 * The server's SVG chart as an image: an <img> never runs script or loads anything the SVG names, and its
 * data: URL is the only thing the page's CSP allows beyond its own files (img-src 'self' data:). Never inserted
 * as markup.
 */
function chartImage(svg: string): HTMLImageElement {
  const img = h("img", {
    class: "chart",
    attrs: {
      alt: "Answer kept (solid) and evidence recall (dashed) against mean tokens, one line per policy, each point a token budget; the table above has the figures.",
    },
  });
  img.src = `data:image/svg+xml;charset=utf-8,${encodeURIComponent(svg)}`;
  return img;
}

// --- start: the keys this tab already has ---

ui.text.value = SAMPLE_POLICY;
const known = Object.keys(keys()).sort();
fillTenants(known[0]);
const first = currentKey();
if (first !== undefined) void connect(first);
else validateSoon(0);
