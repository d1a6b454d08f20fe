/**
 * The playground fixes of issue 28 (point 9) in a real browser (Debian's chromium through playwright-core) against
 * a real gateway: a failed Compare clears the previous result and shows its error beside the button; scores
 * against a threshold never read "0.50 < 0.5"; sentence numbers count from 1; the funnel shows what was fetched and
 * the topK cut; the eval shows its progress and can be cancelled (and the server stops searching); in dev mode the
 * page says any key works and lists the local store's users.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import type { Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { type Harness, KEYS, makeHarness } from "../helpers/harness";
import { makeCandidate } from "../helpers/items";
import { launchChromium, openPlayground, serveOnLoopback, watchPage } from "../helpers/playground-page";

jest.setTimeout(60_000);

const ROOT = join(__dirname, "..", "..");

/** No ranking (so dedup's topK cut is a stage of its own), relevant clipping to one sentence, minScore 0.5. */
const TIGHT = `name: tight
version: 1
retrieval: { topK: 2, minScore: 0.5, clipSentences: 1 }
clip: { mode: relevant }
`;

describe("playground fixes in chromium (a tenant with a key)", () => {
  let h: Harness;
  let server: Server;
  let url: string;
  let browser: Browser;
  let page: Page;
  let problems: string[];
  const dir = mkdtempSync(join(tmpdir(), "memgate-ui-fixes-"));

  beforeAll(async () => {
    // 40 questions: enough for the eval to be cancelled while it runs.
    const golden = join(dir, "questions.jsonl");
    writeFileSync(
      golden,
      Array.from({ length: 40 }, (_, i) =>
        JSON.stringify({ id: `q${i}`, userId: "ana", query: `oat milk ${i}`, expectedIds: ["f1"] }),
      ).join("\n"),
    );
    h = await makeHarness({ env: { MEMGATE_PLAYGROUND: "on", MEMGATE_PLAYGROUND_GOLDEN: golden } });
    h.zep.acme?.setUser("ana", [
      makeCandidate({
        id: "f1",
        content: "Ana orders an oat milk flat white. She likes it hot. She pays at the counter.",
        score: 0.92,
      }),
      // Just under tight's minScore 0.5: two decimals would show it as 0.50.
      makeCandidate({ id: "near", content: "Ana once tried a decaf latte.", score: 0.4962 }),
      makeCandidate({ id: "m1", content: "Ana tips the barista on Fridays.", score: 0.61 }),
      makeCandidate({ id: "m2", content: "Ana's office is near the station.", score: 0.58 }),
    ]);
    ({ server, url } = await serveOnLoopback(h.app));
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    // The refused comparison is a 400 on purpose; the cancelled eval is an aborted request, not a status.
    problems = watchPage(page, {
      responses: (status, u) => status === 400 && u.endsWith("/v1/playground/compare"),
    });
    await openPlayground(page, url, KEYS.acmeOps);
  });

  afterAll(async () => {
    await browser?.close();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    await h?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("shows scores against minScore with the digits the comparison needs, sentences from 1, fetch and top_k", async () => {
    await page.locator("#policy-text").fill(TIGHT);
    await page.locator("#user").fill("ana");
    await page.locator("#policy-a").selectOption("@editor");
    await page.locator("#policy-b").selectOption("");
    await page.locator("#query").fill("oat milk");
    await page.locator("#query").press("Enter");
    await page.locator("#status", { hasText: "Compared 1 policy" }).waitFor();
    const run = page.locator("article.run").first();

    const near = run.locator('tr[data-id="near"]');
    await expect(near.getAttribute("data-state")).resolves.toBe("dropped");
    await expect(near.textContent()).resolves.toContain("below_min_score: score 0.496 < minScore 0.5");
    await expect(near.locator("td").nth(1).textContent()).resolves.toBe("0.496");
    // Scores far from the threshold keep two decimals.
    await expect(run.locator('tr[data-id="f1"] td').nth(1).textContent()).resolves.toBe("0.92");
    await expect(page.locator("#results").textContent()).resolves.not.toMatch(/0\.50 < 0\.5\b/);

    // The first sentence is sentence #1 (the API counts from 1 too).
    await expect(run.locator('tr[data-id="f1"]').textContent()).resolves.toContain(
      "clipped: kept sentence #1 (match",
    );
    await expect(run.locator('tr[data-id="f1"]').textContent()).resolves.toContain("of 3");

    // The funnel starts with what was fetched (and asked), and shows the topK cut as its own stage.
    const funnel = run.locator(".funnel li");
    await expect(funnel.first().textContent()).resolves.toMatch(/^fetch.*4 fetched \(asked 4\)$/);
    const stages = await funnel.locator(":scope > span:first-child").allTextContents();
    expect(stages).toEqual(
      expect.arrayContaining(["fetch", "score_threshold", "deduplication", "top_k", "token_budget"]),
    );
    expect(stages.indexOf("top_k")).toBe(stages.indexOf("deduplication") + 1);
    const cut = funnel.nth(stages.indexOf("top_k"));
    await expect(cut.textContent()).resolves.toMatch(/3 → 2$/);
    // The memory beyond the cut says why, with the topK.
    await expect(run.locator('tr[data-id="m2"]').textContent()).resolves.toContain(
      "top_k: beyond_topK: after the 2 best",
    );
  });

  it("a failed Compare clears the previous result and shows its error beside the button", async () => {
    await expect(page.locator("#results").isVisible()).resolves.toBe(true);
    await page.locator("#user").fill("not a valid id!");
    await page.locator("#compare").click();
    const error = page.locator("#compare-error");
    await error.filter({ hasText: "Compare failed" }).waitFor();
    await expect(error.textContent()).resolves.toMatch(/^Compare failed: 400 VALIDATION_FAILED: userId: /);
    // Beside the button: in the same row of the Request panel, not only in the status line at the top.
    const besideButton = await page.evaluate<boolean>(
      `document.getElementById("compare-error").parentElement === document.getElementById("compare").parentElement`,
    );
    expect(besideButton).toBe(true);
    await expect(error.isVisible()).resolves.toBe(true);
    // Nothing of the previous comparison is left to be read as this one's.
    await expect(page.locator("#results").isHidden()).resolves.toBe(true);
    await expect(page.locator("article.run").count()).resolves.toBe(0);

    // The next successful comparison clears the error.
    await page.locator("#user").fill("ana");
    await page.locator("#compare").click();
    await page.locator("#status", { hasText: "Compared 1 policy" }).waitFor();
    await expect(error.textContent()).resolves.toBe("");
    await expect(page.locator("#results").isVisible()).resolves.toBe(true);
  });

  it("the eval shows its progress and can be cancelled; the gateway then stops searching", async () => {
    const zep = h.zep.acme;
    if (zep === undefined) throw new Error("no fake zep");
    zep.script = { kind: "delay", ms: 250 };
    const before = zep.searchCalls;
    await page.locator("#eval-run").click();
    const status = page.locator("#eval-status");
    await status.filter({ hasText: /^\d+ \/ 40 questions searched$/ }).waitFor();
    await expect(page.locator("#eval-progress").isVisible()).resolves.toBe(true);
    await expect(page.locator("#eval-progress").getAttribute("max")).resolves.toBe("40");
    await expect(page.locator("#eval-run").isDisabled()).resolves.toBe(true);
    await page.locator("#eval-cancel").click();
    await status.filter({ hasText: "Cancelled" }).waitFor();
    await expect(page.locator("#eval-result").textContent()).resolves.toContain("Eval cancelled");
    await expect(page.locator("#eval-cancel").isHidden()).resolves.toBe(true);
    await expect(page.locator("#eval-run").isEnabled()).resolves.toBe(true);
    // The server saw the request close: at most the searches already in flight finish, no new ones start.
    const atCancel = zep.searchCalls;
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(zep.searchCalls - atCancel).toBeLessThanOrEqual(4);
    expect(zep.searchCalls - before).toBeLessThan(40);

    // Run to the end: the progress reaches 40 and the table is shown.
    zep.script = { kind: "ok" };
    await page.locator("#eval-run").click();
    await status.filter({ hasText: "Done: 40 questions." }).waitFor();
    await page.locator("table.eval tbody tr").first().waitFor();
    await expect(page.locator("#eval-progress").isHidden()).resolves.toBe(true);
  });

  it("ran without a script error or an unexpected failed answer", () => {
    expect(problems).toEqual([]);
  });
});

describe("playground fixes in chromium (dev mode)", () => {
  let h: Harness;
  let server: Server;
  let url: string;
  let browser: Browser;

  beforeAll(async () => {
    const records = readFileSync(join(ROOT, "config/demo-memories.jsonl"), "utf8")
      .split("\n")
      .filter((l) => l.startsWith("{"))
      .map((l) => JSON.parse(l) as unknown);
    h = await makeHarness({
      tenants: null,
      localRecords: records,
      env: { MEMGATE_PLAYGROUND: "on", MEMGATE_BACKEND: "local" },
    });
    ({ server, url } = await serveOnLoopback(h.app));
    browser = await launchChromium();
  });

  afterAll(async () => {
    await browser?.close();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    await h?.close();
  });

  it("says any key works, connects by itself and lists the local store's users", async () => {
    const page = await browser.newPage();
    const problems = watchPage(page, { responses: () => false });
    await page.goto(`${url}/ui`);
    const hint = page.locator("#dev-mode");
    await hint.waitFor();
    await expect(hint.textContent()).resolves.toContain("any key works");
    await page.locator("#status", { hasText: "Tenant dev" }).waitFor();
    const users = page.locator("#dev-users");
    await expect(users.textContent()).resolves.toBe(
      "Dev mode: users in the local store: ana, min-jun, sam, wei.",
    );
    const options = await page.evaluate<string[]>(
      `[...document.querySelectorAll("#users option")].map((o) => o.value)`,
    );
    expect(options).toEqual(["ana", "min-jun", "sam", "wei"]);
    // A comparison with no key typed at all works.
    await page.locator("#user").fill("ana");
    await page.locator("#query").fill("what coffee do I usually order?");
    await page.locator("#query").press("Enter");
    await page.locator("#status", { hasText: /^Compared / }).waitFor();
    expect(problems).toEqual([]);
    await page.close();
  });
});
