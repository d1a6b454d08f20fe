/**
 * `npm run screenshot`: regenerates docs/playground.png, the policy playground shown in README. Starts the gateway
 * in dev mode on a free loopback port over the golden set's memories (eval/golden/basic, the embedded local backend),
 * compares the default policy with the editor's sample policy for one question, and takes a screenshot of the top
 * of the page in Debian's chromium (the same steps as test/ui/playground.browser.test.ts).
 */
import { join } from "node:path";
import { startServer } from "../src/server/serve";
import { launchChromium, openPlayground, runComparison } from "../test/helpers/playground-page";

// Paths relative to the repository (they show on the page): run from its root.
process.chdir(join(__dirname, ".."));
const OUT = join("docs", "playground.png");

async function main(): Promise<void> {
  const running = await startServer({
    HOST: "127.0.0.1",
    PORT: "0",
    LOG_LEVEL: "warn",
    MEMGATE_BACKEND: "local",
    MEMGATE_LOCAL_DATA: "eval/golden/basic/memories.jsonl",
    MEMGATE_POLICY_DIR: "policies",
    // Dev mode (no tenants file): any well-formed key is the `dev` tenant's, with every scope.
    MEMGATE_TENANTS_FILE: "",
    MEMGATE_PLAYGROUND: "on",
    MEMGATE_PLAYGROUND_GOLDEN: "eval/golden/basic/questions.jsonl",
  });
  const browser = await launchChromium();
  try {
    const page = await browser.newPage({ viewport: { width: 1360, height: 900 }, deviceScaleFactor: 1 });
    await openPlayground(page, running.url, "mg_dev_playground_screenshot");
    await runComparison(page, {
      user: "noor",
      query: "when was my MOT appointment booked?",
      policyA: "default",
      policyB: "@editor",
    });
    // The top of the page (request, editor, funnels, budgets, flags, the first memories): the whole page with
    // every memory and the eval table is over 3,000 pixels tall, too much for README.
    await page.screenshot({ path: OUT, fullPage: true, clip: { x: 0, y: 0, width: 1360, height: 1500 } });
    process.stdout.write(`wrote ${OUT}\n`);
  } finally {
    await browser.close();
    await running.stop();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`screenshot: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
