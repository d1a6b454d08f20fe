/**
 * The playground's ranking view in a real browser (Debian's chromium through playwright-core, a real gateway with
 * the fake Zep behind it): per candidate memory its signals, relevance and outcome, the query analysis and the
 * sufficiency certificate; a policy without ranking says it has none. Needs `npm run build` (dist/ui). Leaves a
 * screenshot of the ranked run in test-results/playground-signals.png.
 */
import { mkdirSync } from "node:fs";
import type { Server } from "node:http";
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
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

const RANKED = `name: ranked
version: 1
retrieval: { topK: 2, overfetch: 2, minScore: 0.15 }
ranking: { enabled: true, reinforcement: { enabled: true } }
sufficiency: { enabled: true }
`;

describe("the playground's ranking signals in chromium", () => {
  let h: Harness;
  let server: Server;
  let url: string;
  let browser: Browser;
  let page: Page;
  let problems: string[] = [];

  beforeAll(async () => {
    h = await makeHarness({ env: { MEMGATE_PLAYGROUND: "on" }, policies: { ranked: RANKED } });
    h.zep.acme?.setUser("ana", [
      makeCandidate({ id: "f1", content: "Ana orders an oat milk flat white at Cafe Luna.", score: 0.9 }),
      makeCandidate({ id: "f2", content: "Ana walks to Cafe Luna every Monday.", score: 0.7 }),
      makeCandidate({ id: "f3", content: "Ana's bike has a flat tyre.", score: 0.5 }),
      makeCandidate({ id: "low", content: "Unrelated note about parking.", score: 0.1 }),
    ]);
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

  it("shows each memory's signals, relevance and outcome, the query analysis and the certificate", async () => {
    await openPlayground(page, url, KEYS.acmeOps);
    await runComparison(page, {
      user: "ana",
      query: "What does Ana order at Cafe Luna?",
      policyA: "ranked",
      policyB: "default",
    });
    const ranked = page.locator("article.run").nth(0);
    const table = ranked.locator("table.signals");
    const header = await table.locator("thead th").allTextContents();
    expect(header).toEqual([
      "memory",
      "rank",
      "relev.",
      "outcome",
      "backend",
      "lexical",
      "entity",
      "time",
      "answer",
      "type",
      "reinf.",
    ]);
    await expect(table.locator("thead th").last().getAttribute("title")).resolves.toBe("reinforcement");
    // Every candidate above minScore is ranked; the best is kept, rank 1, its signals in the row.
    const rows = table.locator("tbody tr");
    await expect(rows.count()).resolves.toBe(3);
    const first = rows.nth(0);
    await expect(first.getAttribute("data-id")).resolves.toBe("f1");
    const cells = await first.locator("td").allTextContents();
    expect(cells[0]).toBe("f1");
    expect(cells[1]).toBe("1");
    expect(Number(cells[2])).toBeGreaterThan(0); // relevance
    expect(cells[3]).toBe("kept");
    expect(cells[4]).toBe("0.90"); // backend: the adapter's score
    expect(Number(cells[6])).toBeGreaterThan(0); // entity: "Ana", "Cafe", "Luna"
    expect(cells[7]).toBe("—"); // time: the question has no time scope
    expect(cells[10]).toBe("0.00"); // reinforcement: never kept before
    // topK 2: the third is dropped, and the table says by which stage.
    const third = rows.nth(2);
    await expect(third.getAttribute("data-state")).resolves.toBe("dropped");
    await expect(third.locator("td").nth(3).textContent()).resolves.toBe("dropped by select: beyond_topK");

    const analysis = Object.fromEntries(
      await ranked
        .locator("dl.analysis dt")
        .evaluateAll((dts) => dts.map((dt) => [dt.textContent, dt.nextElementSibling?.textContent])),
    );
    expect(analysis).toMatchObject({
      intent: "factual",
      "answer type": "thing",
      entities: "Ana, Cafe, Luna",
      "time scope": "none",
      "reinforcement counts": "available",
    });
    expect(Number(analysis.complexity)).toBeGreaterThan(0);
    expect(["sufficient", "partial", "insufficient"]).toContain(analysis.sufficiency);
    expect(Number(analysis.completeness)).toBeGreaterThan(0);

    // The default (test) policy does not rank: it says so instead of an empty table.
    const plain = page.locator("article.run").nth(1);
    await expect(plain.locator("table.signals").count()).resolves.toBe(0);
    await expect(plain.textContent()).resolves.toContain("No ranking signals: ranking.enabled is off");
    expect(problems).toEqual([]);
    const artifacts = join(__dirname, "..", "..", "test-results");
    mkdirSync(artifacts, { recursive: true });
    await ranked.screenshot({ path: join(artifacts, "playground-signals.png") });
  });
});
