/**
 * The policy playground page (served at /ui from dist/ui; docs/playground.md). Plain DOM, no framework,
 * no inline script or style (the page's CSP allows only its own files): every call goes to the admin API under
 * /v1/playground with the key the user pasted, as `Authorization: Bearer <key>`. The keys live in this tab's
 * sessionStorage, one per tenant, and nowhere else.
 */
import type {
  Comparison,
  EvalAnswer,
  EvalLine,
  Memory,
  PlaygroundInfo,
  Problem,
  Run,
  ShadowReport,
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
  compareError: byId("compare-error", HTMLOutputElement),
  devMode: byId("dev-mode", HTMLElement),
  users: byId("users", HTMLDataListElement),
  devUsers: byId("dev-users", HTMLParagraphElement),
  text: byId("policy-text", HTMLTextAreaElement),
  validation: byId("validation", HTMLOutputElement),
  results: byId("results", HTMLElement),
  summary: byId("summary", HTMLParagraphElement),
  runs: byId("runs", HTMLDivElement),
  evalSection: byId("eval", HTMLElement),
  evalAbout: byId("eval-about", HTMLParagraphElement),
  evalRun: byId("eval-run", HTMLButtonElement),
  evalCancel: byId("eval-cancel", HTMLButtonElement),
  evalProgress: byId("eval-progress", HTMLProgressElement),
  evalStatus: byId("eval-status", HTMLOutputElement),
  evalBudgets: byId("eval-budgets", HTMLInputElement),
  evalResult: byId("eval-result", HTMLDivElement),
  shadowSection: byId("shadow", HTMLElement),
  shadowAbout: byId("shadow-about", HTMLParagraphElement),
  shadowRefresh: byId("shadow-refresh", HTMLButtonElement),
  shadowResult: byId("shadow-result", HTMLDivElement),
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

/** A request to the API: the key as `Authorization: Bearer` (none: no header), JSON in. */
function requestInit(key: string | undefined, body?: unknown, extra: RequestInit = {}): RequestInit {
  const headers: Record<string, string> = {};
  if (key !== undefined) headers.authorization = `Bearer ${key}`;
  if (body !== undefined) headers["content-type"] = "application/json";
  const init: RequestInit = {
    method: body === undefined ? "GET" : "POST",
    headers,
    credentials: "omit",
    cache: "no-store",
    ...extra,
  };
  if (body !== undefined) init.body = JSON.stringify(body);
  return init;
}

function problemMessage(status: number, problem: Partial<Problem> | undefined, fallback: string): string {
  return `${status} ${problem?.code ?? ""}: ${problem?.detail ?? fallback}`.trim();
}

async function send(path: string, init: RequestInit): Promise<Response> {
  try {
    return await fetch(path, init);
  } catch (err) {
    if (err instanceof DOMException && err.name === "AbortError") throw err;
    throw new ApiError("the gateway did not answer");
  }
}

async function api<T>(path: string, key: string | undefined, body?: unknown): Promise<T> {
  const res = await send(path, requestInit(key, body));
  const json: unknown = await res.json().catch(() => undefined);
  if (!res.ok) throw new ApiError(problemMessage(res.status, json as Partial<Problem>, res.statusText));
  return json as T;
}

/**
 * Numbers shown side by side with a threshold they are compared with: as many decimals (2 to 6) as it takes for
 * the rounded figures to compare as the true ones do — never "0.50 < 0.5" for 0.4962 against 0.5.
 */
function digitsFor(value: number, threshold: number): number {
  const truth = Math.sign(value - threshold);
  for (let d = 2; d <= 6; d++) {
    if (Math.sign(Number(value.toFixed(d)) - Number(threshold.toFixed(d))) === truth) return d;
  }
  return 6;
}

/** `value` with the decimals `digitsFor` asks for against `threshold` (two without one). */
function fixedAgainst(value: number, threshold: number | undefined): string {
  return value.toFixed(threshold === undefined ? 2 : digitsFor(value, threshold));
}

/** A threshold as written in the policy (0.5 stays 0.5), or "?" when the trace has none. */
function thresholdText(threshold: unknown): string {
  return typeof threshold === "number" ? String(threshold) : "?";
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
  showDevMode(next.devMode);
  ui.users.replaceChildren(...next.users.map((u) => h("option", { attrs: { value: u } })));
  ui.devUsers.hidden = !next.devMode;
  ui.devUsers.textContent = next.devMode
    ? next.users.length === 0
      ? "Dev mode: the local store has no users yet."
      : `Dev mode: users in the local store: ${next.users.join(", ")}.`
    : "";
  ui.evalSection.hidden = next.golden === null;
  if (next.golden !== null) {
    ui.evalAbout.textContent = `${next.golden.questions} questions from the configured golden set; candidates fetched from the selected backend.`;
  }
  setStatus(
    `Tenant ${next.tenant}: ${next.policies.length} policies, backends ${next.backends.join(", ") || "none"}.`,
  );
  validateSoon(0);
  void loadShadow();
}

/** Dev mode (no tenants file): the key field says any key works, and an empty key is sent as "dev". */
let devMode = false;

function showDevMode(on: boolean): void {
  devMode = on;
  ui.devMode.hidden = !on;
}

/**
 * Before any key: does this gateway run in dev mode (`GET /ui/mode`, no key needed)? Then any key works: the page
 * says so and connects with "dev" at once, which lists the local store's users.
 */
async function probeDevMode(): Promise<void> {
  try {
    const mode = await api<{ devMode: boolean }>("/ui/mode", undefined);
    if (!mode.devMode) return;
    showDevMode(true);
    if (currentKey() === undefined) await connect("dev");
  } catch {
    // No answer: the page waits for a key.
  }
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
  const key = ui.key.value.trim() || (devMode ? "dev" : "");
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
  ui.compareError.textContent = "";
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
    // A failed comparison leaves no result behind that could be read as its own; the error stands by the button.
    clearResults();
    const message = err instanceof Error ? err.message : String(err);
    ui.compareError.textContent = `Compare failed: ${message}`;
    setStatus(`Compare failed: ${message}`, true);
  } finally {
    ui.compare.disabled = false;
  }
}

function clearResults(): void {
  ui.results.hidden = true;
  ui.summary.replaceChildren();
  ui.runs.replaceChildren();
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
  if (reason === "below_min_score") {
    const min = typeof d.minScore === "number" ? d.minScore : undefined;
    const shown = score === undefined ? "?" : fixedAgainst(score, min);
    return `below_min_score: score ${shown} < minScore ${thresholdText(d.minScore)}`;
  }
  if (reason.startsWith("duplicate_of:")) return `${reason}: the same memory as ${reason.slice(13)}`;
  if (reason === "beyond_topK") return `beyond_topK: after the ${d.topK ?? "topK"} best`;
  if (reason === "beyond_maxMemories") return "beyond_maxMemories: budget.maxMemories reached";
  if (reason === "dropped_by_budget") return `dropped_by_budget: does not fit ${d.maxTokens} tokens`;
  if (reason === "not_needed")
    return `not_needed: the kept memories already cover the question (completeness ${d.completeness} ≥ budget.stop)`;
  if (reason === "truncated_by_budget") return `truncated_by_budget: cut to fit ${d.maxTokens} tokens`;
  if (reason === "clipped" && change.sentences !== undefined) {
    const kept = change.sentences.kept
      .map(
        (k) =>
          `#${k.sentence} (${k.why}${k.terms?.length ? `: ${k.terms.join(", ")}` : ""}${k.answer !== undefined ? "; holds an answer" : ""})`,
      )
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

/** A funnel row's figures: in → out, and for the fetch stage what was fetched of what was asked. */
function stageCounts(s: StageTrace): string {
  if (s.stage !== "fetch") return `${s.in} → ${s.out}`;
  const asked = s.detail?.asked;
  return `${s.out} fetched${typeof asked === "number" ? ` (asked ${asked})` : ""}`;
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
        h("span", { text: stageCounts(s) }),
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
    // The share rounded down: a budget 99.6 % used never reads "100 %".
    h("p", {
      text: `${used} / ${run.maxTokens} tokens (${run.tokenizer}), ${Math.floor((used / run.maxTokens) * 100)} % of the budget; one segment per kept memory.`,
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

  const minScore = trace.find((s) => s.stage === "score_threshold")?.detail?.minScore;
  const threshold = typeof minScore === "number" ? minScore : undefined;
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
      h("td", { text: fixedAgainst(cand.score, threshold) }),
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

/** The running eval's controller: Cancel aborts the request, and the server stops searching when it closes. */
let evalRunning: AbortController | undefined;

ui.evalCancel.addEventListener("click", () => evalRunning?.abort());

function showProgress(done: number, total: number): void {
  ui.evalProgress.hidden = false;
  ui.evalProgress.max = Math.max(1, total);
  ui.evalProgress.value = done;
  ui.evalStatus.textContent = `${done} / ${total} questions searched`;
}

/** POST /v1/playground/eval as NDJSON: progress lines, then the answer (or a problem). */
async function evalStream(key: string, body: unknown, signal: AbortSignal): Promise<EvalAnswer> {
  const res = await send(
    "/v1/playground/eval",
    requestInit(key, body, {
      signal,
      headers: {
        authorization: `Bearer ${key}`,
        accept: "application/x-ndjson",
        "content-type": "application/json",
      },
    }),
  );
  if (!res.ok || res.body === null) {
    const json: unknown = await res.json().catch(() => undefined);
    throw new ApiError(problemMessage(res.status, json as Partial<Problem>, res.statusText));
  }
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffered = "";
  let result: EvalAnswer | undefined;
  for (;;) {
    const { value, done } = await reader.read();
    if (value !== undefined) buffered += value;
    let nl = buffered.indexOf("\n");
    while (nl >= 0) {
      const line = buffered.slice(0, nl).trim();
      buffered = buffered.slice(nl + 1);
      nl = buffered.indexOf("\n");
      if (line === "") continue;
      const parsed = JSON.parse(line) as EvalLine;
      if ("progress" in parsed) showProgress(parsed.progress.done, parsed.progress.total);
      else if ("result" in parsed) result = parsed.result;
      else throw new ApiError(`${parsed.problem.code}: ${parsed.problem.detail}`);
    }
    // The answer is read to its end (the result is its last line): a body left unread is a request the browser
    // aborts later, when the page goes away.
    if (done) {
      if (result !== undefined) return result;
      throw new ApiError("the gateway closed the answer before its end");
    }
  }
}

async function runEval(): Promise<void> {
  const key = currentKey();
  if (key === undefined) return;
  const controller = new AbortController();
  evalRunning = controller;
  ui.evalRun.disabled = true;
  ui.evalCancel.hidden = false;
  ui.evalCancel.disabled = false;
  ui.evalStatus.textContent = "Starting…";
  ui.evalProgress.hidden = true;
  ui.evalResult.replaceChildren();
  // "300, 450,800" → [300, 450, 800]; the server checks each as a policy's retrieval.maxTokens.
  const budgets = ui.evalBudgets.value
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "")
    .map(Number);
  try {
    const answer = await evalStream(
      key,
      {
        ...(ui.backend.value === "" ? {} : { backend: ui.backend.value }),
        policies: chosenPolicies(),
        ...(budgets.length === 0 ? {} : { budgets }),
      },
      controller.signal,
    );
    ui.evalStatus.textContent = `Done: ${answer.questions} questions.`;
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
    const cancelled = controller.signal.aborted;
    ui.evalStatus.textContent = cancelled ? "Cancelled: the gateway stopped searching." : "";
    ui.evalResult.replaceChildren(
      cancelled
        ? h("p", { class: "muted", text: "Eval cancelled; no figures." })
        : h("p", {
            class: "error",
            text: `Eval failed: ${err instanceof Error ? err.message : String(err)}`,
          }),
    );
  } finally {
    if (evalRunning === controller) evalRunning = undefined;
    ui.evalRun.disabled = false;
    ui.evalCancel.hidden = true;
    ui.evalProgress.hidden = true;
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

// --- the shadow report: the tenant's recent shadow runs (docs/rollouts.md#shadow), refreshed while shown ---

const SHADOW_REFRESH_MS = 10_000;
let shadowTimer: number | undefined;

ui.shadowRefresh.addEventListener("click", () => void loadShadow());

async function loadShadow(): Promise<void> {
  window.clearTimeout(shadowTimer);
  const key = currentKey();
  if (key === undefined) return;
  try {
    renderShadow(await api<ShadowReport>("/v1/playground/shadow", key));
  } catch (err) {
    ui.shadowSection.hidden = false;
    ui.shadowResult.replaceChildren(
      h("p", { class: "error", text: `Shadow report: ${err instanceof Error ? err.message : String(err)}` }),
    );
  }
  shadowTimer = window.setTimeout(() => void loadShadow(), SHADOW_REFRESH_MS);
}

function renderShadow(report: ShadowReport): void {
  ui.shadowSection.hidden = false;
  const { rule } = report;
  if (rule === null) {
    ui.shadowAbout.textContent = `Tenant ${report.tenant} has no shadow policy (tenants file policies.shadow, or MEMGATE_SHADOW_POLICY in dev mode).`;
    ui.shadowResult.replaceChildren();
    return;
  }
  const { ran, dropped, error } = report.counts;
  ui.shadowAbout.textContent =
    `Shadow policy ${rule.policy} on ${Math.round(rule.sample * 100)} % of cache misses: ` +
    `${report.runs} recent run(s) in this process (last ${report.window} kept); ran ${ran}, dropped ${dropped}, errors ${error}.`;
  const { tokens, overlap } = report;
  if (tokens === null || overlap === null) {
    ui.shadowResult.replaceChildren(h("p", { text: "No shadow run yet: it runs on cache misses." }));
    return;
  }
  const figures = figuresTable(
    {
      header: ["", "served policy", "shadow"],
      rows: [
        ["mean tokens kept", String(tokens.primaryMean), String(tokens.shadowMean)],
        ["token delta (shadow − served)", `mean ${tokens.deltaMean}, median ${tokens.deltaMedian}`, ""],
        [
          "overlap of kept memories",
          `median ${overlap.median}, mean ${overlap.mean}, lowest ${overlap.min}`,
          "",
        ],
      ],
    },
    "tokens and overlap on the same candidates",
  );
  const dropsOf = (rows: ShadowReport["drops"]["primary"]) =>
    rows.length === 0 ? "nothing the other side kept" : rows.map((r) => `${r.reason} ×${r.count}`).join(", ");
  const drops = figuresTable(
    {
      header: ["side", "drops most (of what the other side kept)"],
      rows: [
        ["served policy", dropsOf(report.drops.primary)],
        [`shadow ${rule.policy}`, dropsOf(report.drops.shadow)],
      ],
    },
    "what each side drops most",
  );
  drops.classList.add("shadow-drops");
  const recent = figuresTable(
    {
      header: ["at", "served", "tokens", "shadow tokens", "overlap", "only served", "only shadow"],
      rows: report.recent.map((r) => [
        r.at,
        r.policy,
        String(r.primaryTokens),
        String(r.shadowTokens),
        String(Math.round(r.overlap * 1000) / 1000),
        String(r.primaryOnly),
        String(r.shadowOnly),
      ]),
    },
    "most recent runs",
  );
  ui.shadowResult.replaceChildren(figures, drops, recent);
}

// --- start: the keys this tab already has ---

ui.text.value = SAMPLE_POLICY;
const known = Object.keys(keys()).sort();
fillTenants(known[0]);
const first = currentKey();
if (first !== undefined) void connect(first);
else {
  validateSoon(0);
  void probeDevMode();
}
