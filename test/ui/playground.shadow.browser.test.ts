/**
 * The playground's live shadow report in a real browser (Debian's chromium through playwright-core, a real gateway
 * with the fake Zep behind it and a shadow policy for the tenant): traffic on /v1/retrieve makes shadow runs, the
 * panel shows tokens, overlap and what each side drops most; Refresh picks up new runs. Needs the built page
 * (`npm run build`, dist/ui).
 */
import type { Server } from "node:http";
import type { Browser, Page } from "playwright-core";
import request from "supertest";
import { type Harness, KEYS, makeHarness } from "../helpers/harness";
import { launchChromium, openPlayground, serveOnLoopback, watchPage } from "../helpers/playground-page";
import { ANA_MEMORIES, LEAN, SHADOWED } from "../rollout/fixtures";

jest.setTimeout(30_000);

describe("the playground's shadow report in chromium", () => {
  let h: Harness;
  let server: Server;
  let url: string;
  let browser: Browser;
  let page: Page;
  let problems: string[] = [];

  const retrieve = (query: string) =>
    request(url)
      .post("/v1/retrieve")
      .set("x-api-key", KEYS.acmeChat)
      .send({ userId: "ana", sessionId: "s-1", query, useMemory: true })
      .expect(200);

  beforeAll(async () => {
    h = await makeHarness({ env: { MEMGATE_PLAYGROUND: "on" }, policies: { lean: LEAN }, tenants: SHADOWED });
    h.zep.acme?.setUser("ana", ANA_MEMORIES.slice(0, 4));
    ({ server, url } = await serveOnLoopback(h.app));
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    problems = watchPage(page);
  });

  afterAll(async () => {
    await browser?.close();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    await h?.close();
  });

  it("shows tokens, overlap and what each side drops most, and refreshes", async () => {
    await openPlayground(page, url, KEYS.acmeOps);
    const about = page.locator("#shadow-about");
    await about.filter({ hasText: "Shadow policy lean on 100 % of cache misses" }).waitFor();
    await expect(page.locator("#shadow-result").textContent()).resolves.toContain("No shadow run yet");

    await retrieve("what do I drink in the morning?");
    await retrieve("where do I live?");
    await h.services.shadow?.idle();
    await page.locator("#shadow-refresh").click();
    await about.filter({ hasText: "2 recent run(s)" }).waitFor();

    const figures = page.locator("#shadow-result table").nth(0);
    const rows = await figures.locator("tbody tr").allTextContents();
    expect(rows[0]).toMatch(/^mean tokens kept\d+(\.\d+)?\d+(\.\d+)?$/);
    expect(rows[2]).toMatch(/^overlap of kept memoriesmedian 0\.5, mean 0\.5, lowest 0\.5/); // {m1,m2} of 4
    const drops = await page.locator("#shadow-result table.shadow-drops tbody tr").allTextContents();
    expect(drops).toEqual([
      "served policynothing the other side kept",
      "shadow leanbelow_min_score ×2, beyond_topK ×2",
    ]);
    await expect(page.locator("#shadow-result table").nth(2).locator("tbody tr").count()).resolves.toBe(2);
    expect(problems).toEqual([]);
  });
});
