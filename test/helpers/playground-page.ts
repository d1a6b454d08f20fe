/**
 * Drives the policy playground page (/ui) in Debian's chromium through playwright-core: the browser test
 * (test/ui/playground.browser.test.ts) and the README screenshot (scripts/screenshot.ts) use the same steps.
 */
import { existsSync } from "node:fs";
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
