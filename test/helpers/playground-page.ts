/**
 * Drives the policy playground page (/ui) in Debian's chromium through playwright-core: the browser test
 * (test/ui/playground.browser.test.ts) and the README screenshot (scripts/screenshot.ts) use the same steps.
 */
import { existsSync } from "node:fs";
import { createServer, type RequestListener, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { type Browser, chromium, type Page } from "playwright-core";

/** Debian's chromium (`apt-get install chromium`, .ci/run); MEMGATE_CHROMIUM names another binary. */
export const CHROMIUM = process.env.MEMGATE_CHROMIUM ?? "/usr/bin/chromium";

/** Headless, offline-minded: no sandbox (CI runs as root), no GPU, no QUIC, no background traffic of its own. */
export const CHROMIUM_ARGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/** A fresh headless chromium (playwright gives each launch a new temporary profile). */
export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `no chromium at ${CHROMIUM}: apt-get install chromium (as .ci/run does) or set MEMGATE_CHROMIUM`,
    );
  }
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
}

/** Serves `app` (a harness's gateway) on a free loopback port. */
export async function serveOnLoopback(app: RequestListener): Promise<{ server: Server; url: string }> {
  const server = createServer(app);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

export interface WatchOptions {
  /** Watch responses: one of 400 or more is a problem unless this says it is expected. */
  responses?: (status: number, url: string) => boolean;
  /**
   * Watch failed requests too, but the dev-mode probe (GET /ui/mode on load), aborted when a test navigates again,
   * and an eval answer the browser calls aborted after its 200 arrived.
   */
  failedRequests?: boolean;
}

/**
 * Records what should not happen in the page (a CSP violation, a script error…): script errors and console errors,
 * and with `options` responses of 400 or more and failed requests. When responses are watched, the console's
 * "Failed to load resource" lines are left to them (reported with their URL).
 */
export function watchPage(page: Page, options: WatchOptions = {}): string[] {
  const problems: string[] = [];
  const { responses, failedRequests = false } = options;
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  page.on("console", (m) => {
    if (m.type() !== "error") return;
    if (responses && m.text().startsWith("Failed to load resource")) return;
    problems.push(`console: ${m.text()}`);
  });
  if (responses) {
    page.on("response", (r) => {
      if (r.status() >= 400 && !responses(r.status(), r.url())) problems.push(`${r.status()} ${r.url()}`);
    });
  }
  if (failedRequests) {
    // The eval's streamed (NDJSON) answer: Chromium sometimes reports it ERR_ABORTED after its 200 came and the page
    // rendered it (seen in full jest runs only). An eval request aborted before its 200 is still a problem.
    const answeredEvals = new WeakSet<object>();
    page.on("response", (r) => {
      if (r.status() === 200 && r.url().endsWith("/v1/playground/eval")) answeredEvals.add(r.request());
    });
    page.on("requestfailed", (r) => {
      const error = r.failure()?.errorText ?? "";
      if (r.url().endsWith("/ui/mode") && error === "net::ERR_ABORTED") return;
      if (error === "net::ERR_ABORTED" && answeredEvals.has(r)) return;
      problems.push(`request failed: ${r.url()} ${error}`);
    });
  }
  return problems;
}

/** Opens /ui, pastes the key (typed, then Enter) and waits until the page knows the key's tenant. */
export async function openPlayground(page: Page, baseUrl: string, key: string): Promise<void> {
  await page.goto(`${baseUrl}/ui`);
  await page.locator("#key").focus();
  await page.keyboard.type(key);
  await page.keyboard.press("Enter");
  await page.locator("#status", { hasText: "Tenant " }).waitFor();
}

export interface ComparisonAsk {
  user: string;
  query: string;
  /** Registry policy names, or "@editor" for the editor's text. */
  policyA: string;
  policyB: string;
  /** The editor's text (left as is when absent). */
  editor?: string;
}

/** Fills the request, submits it with Enter in the query field, and waits for both policies' results. */
export async function runComparison(page: Page, ask: ComparisonAsk): Promise<void> {
  if (ask.editor !== undefined) await page.locator("#policy-text").fill(ask.editor);
  await page.locator("#user").fill(ask.user);
  await page.locator("#policy-a").selectOption(ask.policyA);
  await page.locator("#policy-b").selectOption(ask.policyB);
  await page.locator("#query").fill(ask.query);
  await page.locator("#query").press("Enter");
  await page.locator("#status", { hasText: "Compared 2 policies" }).waitFor();
}
