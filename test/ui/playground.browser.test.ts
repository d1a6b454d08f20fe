/**
 * The policy playground in a real browser: Debian's chromium, driven by playwright-core, against a real gateway
 * (fake Zep behind it). Leaves a screenshot in test-results/playground.png.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import type { Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { checkPolicyText } from "../../src/policy/compile";
import { EDITOR_FILE } from "../../src/retrieval/playground";
import { type Harness, KEYS, makeHarness } from "../helpers/harness";
import { makeCandidate } from "../helpers/items";
import {
  launchChromium,
  openPlayground,
  runComparison,
  serveOnLoopback,
  watchPage,
} from "../helpers/playground-page";

jest.setTimeout(30_000);

const ARTIFACTS = join(__dirname, "..", "..", "test-results");

const STRICT = `name: strict
version: 1
retrieval: { minScore: 0.58 }
redaction: { enabled: true }
`;
const BAD = `name: broken
version: 1
retrieval:
  topK: 50
`;

describe("the policy playground in chromium", () => {
  let h: Harness;
  let server: Server;
  let url: string;
  let browser: Browser;
  let page: Page;
  let problems: string[] = [];

  const dir = mkdtempSync(join(tmpdir(), "memgate-ui-"));

  beforeAll(async () => {
    // A two-question golden set on the fake Zep's user, for the eval table.
    const golden = join(dir, "questions.jsonl");
    writeFileSync(
      golden,
      [
        {
          id: "q1",
          userId: "ana",
          query: "what coffee do I order?",
          expectedIds: ["f1"],
          answers: ["oat milk"],
        },
        { id: "q2", userId: "ana", query: "decaf order", expectedIds: ["m1"] },
      ]
        .map((q) => JSON.stringify(q))
        .join("\n"),
    );
    h = await makeHarness({ env: { MEMGATE_PLAYGROUND: "on", MEMGATE_PLAYGROUND_GOLDEN: golden } });
    h.zep.acme?.setUser("ana", [
      makeCandidate({
        id: "f1",
        content: "Ana orders an oat milk flat white. She likes it hot.",
        score: 0.92,
      }),
      makeCandidate({
        id: "f2",
        content: "ana orders an oat milk flat white. she likes it hot.",
        score: 0.6,
      }),
      makeCandidate({ id: "m1", content: "Write to ana@example.com about the decaf order.", score: 0.55 }),
      makeCandidate({ id: "low", content: "Unrelated note about parking.", score: 0.1 }),
    ]);
    ({ server, url } = await serveOnLoopback(h.app));
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    // A CSP violation, a script error or a failed request is a finding, whatever the test checks.
    problems = watchPage(page, {
      // The refused comparison of the validation test is a 400 on purpose.
      responses: (status, u) => status === 400 && u.endsWith("/v1/playground/compare"),
      failedRequests: true,
    });
  });

  afterAll(async () => {
    await browser?.close();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    await h?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("labels every control and reaches each one with the keyboard", async () => {
    await page.goto(`${url}/ui`);
    // Expressions evaluated in the page (this file is compiled for Node, without the DOM's types).
    const unlabelled = await page.evaluate<string[]>(
      `[...document.querySelectorAll("input, select, textarea")].filter((el) => el.labels.length === 0).map((el) => el.id)`,
    );
    expect(unlabelled).toEqual([]);
    const reached: string[] = [];
    await page.locator("body").focus();
    for (let i = 0; i < 14; i++) {
      await page.keyboard.press("Tab");
      reached.push(await page.evaluate<string>(`document.activeElement?.id ?? ""`));
    }
    expect(reached).toEqual(
      expect.arrayContaining([
        "key",
        "key-add",
        "key-forget",
        "user",
        "query",
        "backend",
        "policy-a",
        "policy-b",
        "compare",
        "policy-text",
      ]),
    );
    // Focus is visible: the focused control draws the focus ring.
    await page.locator("#query").focus();
    await page.keyboard.press("Shift+Tab");
    await page.keyboard.press("Tab");
    await expect(page.evaluate<string>(`document.activeElement.id`)).resolves.toBe("query");
    const outline = await page.evaluate<string>(`getComputedStyle(document.activeElement).outlineStyle`);
    expect(outline).not.toBe("none");
  });

  it("compares two policies on the same candidates and says why a memory was dropped", async () => {
    await openPlayground(page, url, KEYS.acmeOps);
    await expect(page.locator("#status").textContent()).resolves.toContain("Tenant acme");
    await runComparison(page, {
      user: "ana",
      query: "what coffee do I order?",
      policyA: "default",
      policyB: "@editor",
      editor: STRICT,
    });
    expect(h.zep.acme?.searchCalls).toBe(1);
    const runs = page.locator("article.run");
    await expect(runs.count()).resolves.toBe(2);
    await expect(runs.nth(0).locator("h3").textContent()).resolves.toContain("default");
    await expect(runs.nth(1).locator("h3").textContent()).resolves.toContain("strict (editor)");

    // Policy A drops the low-scoring memory and the duplicate; B also drops m1 (below its minScore 0.58).
    const lowA = runs.nth(0).locator('tr[data-id="low"]');
    await expect(lowA.getAttribute("data-state")).resolves.toBe("dropped");
    await expect(lowA.textContent()).resolves.toContain(
      "score_threshold: below_min_score: score 0.10 < minScore 0.15",
    );
    await expect(runs.nth(0).locator('tr[data-id="f2"]').textContent()).resolves.toContain("duplicate_of:f1");
    const m1B = runs.nth(1).locator('tr[data-id="m1"]');
    await expect(m1B.getAttribute("data-state")).resolves.toBe("dropped");
    await expect(m1B.textContent()).resolves.toContain("below_min_score: score 0.55 < minScore 0.58");
    // B redacts: the flag is listed, the address is nowhere in its column.
    await expect(runs.nth(1).locator(".tag.redaction").first().textContent()).resolves.toBe(
      "m1 redacted:email",
    );
    await expect(runs.nth(1).textContent()).resolves.not.toContain("ana@example.com");
    // Funnel, token bar and the final prompt are shown.
    await expect(runs.nth(0).locator(".funnel li").count()).resolves.toBeGreaterThanOrEqual(5);
    await expect(runs.nth(0).locator(".tokens p").textContent()).resolves.toMatch(/^\d+ \/ 1500 tokens/);
    await expect(runs.nth(0).locator("pre.prompt").textContent()).resolves.toContain("oat milk flat white");

    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: join(ARTIFACTS, "playground.png"), fullPage: true });
  });

  it("shows `memgate policy validate`'s error for a bad policy text as it is typed", async () => {
    const expected = checkPolicyText(BAD, EDITOR_FILE);
    if (expected.ok) throw new Error("BAD must not validate");
    expect(expected.lines[0]).toMatch(/^playground\.yaml:4: retrieval\.topK: /);
    await page.locator("#policy-text").fill("");
    await page.locator("#policy-text").pressSequentially(BAD);
    const validation = page.locator("#validation");
    await validation.filter({ hasText: "retrieval.topK" }).waitFor();
    await expect(validation.textContent()).resolves.toBe(expected.lines.join("\n"));
    await expect(validation.getAttribute("class")).resolves.toBe("invalid");
    // Running it is refused with the same line, naming the field.
    await page.locator("#compare").press("Enter");
    await page.locator("#status.error").waitFor();
    await expect(page.locator("#status").textContent()).resolves.toContain(
      `policies[1].text: ${expected.lines[0]}`,
    );
  });

  it("shows `memgate eval`'s table for policies A and B", async () => {
    await page.locator("#policy-text").fill(STRICT);
    await page.locator("#eval-run").focus();
    await page.keyboard.press("Enter");
    const rows = page.locator("table.eval tbody tr");
    await rows.nth(1).waitFor();
    await expect(page.locator("table.eval th").first().textContent()).resolves.toBe("policy");
    await expect(rows.nth(0).locator("td").first().textContent()).resolves.toBe("default");
    await expect(rows.nth(1).locator("td").first().textContent()).resolves.toBe("strict (editor)");
    // The default keeps both expected memories (evidence recall 100 %); strict drops m1 (minScore 0.58).
    await expect(rows.nth(0).locator("td").nth(3).textContent()).resolves.toBe("100.0 %");
    await expect(rows.nth(1).locator("td").nth(3).textContent()).resolves.toBe("50.0 %");
  });

  it("draws quality against tokens: the sweep's figures and the server's SVG chart, shown as an image", async () => {
    await page.locator("#eval-budgets").fill("300, 800");
    await page.locator("#eval-run").click();
    const chart = page.locator("#eval-result img.chart");
    await chart.waitFor();
    // The image loads under the page's CSP (a data: URL) and is the chart, not a broken-image box.
    const width = await page.evaluate<number>(
      `(async () => { const img = document.querySelector("#eval-result img.chart"); await img.decode(); return img.naturalWidth; })()`,
    );
    expect(width).toBeGreaterThan(500);
    await expect(chart.getAttribute("alt")).resolves.toMatch(/^Answer kept \(solid\)/);
    const labels = await page
      .locator("#eval-result table.eval")
      .nth(1)
      .locator("tbody tr td:first-child")
      .allTextContents();
    expect(labels).toEqual([
      "default @ 300",
      "default @ 800",
      "strict (editor) @ 300",
      "strict (editor) @ 800",
    ]);
    // Nothing of the SVG became part of the page's markup.
    await expect(page.locator("#eval-result svg").count()).resolves.toBe(0);
  });

  it("ran without a CSP violation, script error or failed request", () => {
    expect(problems).toEqual([]);
  });
});
