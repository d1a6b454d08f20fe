import type { InjectionAction, InjectionDetectorName, Policy } from "../../policy/schema";
import type { Screener, ScreenHit, ScreenResult } from "../types";
import { INJECTION_DETECTOR_LIST, type InjectionDetector, type Rule } from "./detectors";
import { type FeatureMask, type Features, maskOf, satisfies, scanFeatures } from "./features";
import { ScanText, type Span } from "./text";

/**
 * Compiles a policy's `injection` section into a `Screener` (the `injection` stage, src/pipeline/stages/screen.ts).
 *
 * Each enabled detector runs on the memory as recalled (after redaction), in the fixed order of
 * `INJECTION_DETECTOR_LIST`; the action is the detector's entry in `actions`, else `action`. `flag` and `drop`
 * stop a detector at its first match; `neutralize` replaces every match of the detector with `INJECTION_MARKER`
 * (overlapping matches of several detectors become one marker), and the text is screened again so removing one
 * match cannot leave another behind: a text still matching after `MAX_PASSES` passes becomes the marker alone.
 */

export type InjectionConfig = Policy["injection"];

/** What `neutralize` puts where instruction-like content was. No detector matches it. */
export const INJECTION_MARKER = "[instruction removed]";

const MAX_PASSES = 3;
/** Rejected matches up to this long are searched again from their second character. */
const RETRY_INSIDE = 64;

/** A screener that finds nothing: for disabled screening. */
export const NOOP_SCREENER: Screener = Object.freeze({
  enabled: false,
  screen: (text: string): ScreenResult => ({ hits: [], text, drop: false }),
});

/** A rule with its feature groups as ids. */
interface CompiledRule extends Rule {
  readonly needIds: readonly FeatureMask[] | undefined;
}

interface CompiledDetector {
  readonly name: InjectionDetectorName;
  readonly rules: readonly CompiledRule[];
}

const COMPILED: readonly CompiledDetector[] = INJECTION_DETECTOR_LIST.map((d: InjectionDetector) => ({
  name: d.name,
  rules: d.rules.map((r) => ({ ...r, needIds: r.need?.map(maskOf) })),
}));

/** Options for tests and the eval: `prefilter: false` runs every pattern whatever the features. */
export interface DetectOptions {
  prefilter?: boolean;
}

/**
 * Runs one rule over `s`: the first accepted match (`all` false) or every one, as spans of `s.text` to
 * neutralize. After an accepted match the search resumes past its span, so a pass stays linear.
 */
function runRule(rule: Rule, s: ScanText, all: boolean, out: Span[]): boolean {
  const { re, accept, span } = rule;
  const { text } = s;
  let found = false;
  re.lastIndex = 0;
  for (let m = re.exec(text); m !== null; m = re.exec(text)) {
    const start = m.index;
    const end = start + m[0].length;
    if (end === start) {
      re.lastIndex = start + 1;
      continue;
    }
    if (accept !== undefined && !accept(s, start, end)) {
      // A short rejected match may hide an accepted one that starts inside it (an `on…=` handler inside a
      // rejected tag): retry from the next character. A long one (a URL, a whole tag) resumes after its end,
      // so a pass stays linear.
      re.lastIndex = end - start <= RETRY_INSIDE ? start + 1 : end;
      continue;
    }
    found = true;
    const range = span === undefined ? ([start, end] as const) : span(s, start, end);
    out.push(range);
    if (!all) break;
    re.lastIndex = Math.max(end, range[1]);
  }
  re.lastIndex = 0;
  return found;
}

function detect(
  detector: CompiledDetector,
  features: Features | undefined,
  s: ScanText,
  all: boolean,
  out: Span[],
): boolean {
  let found = false;
  for (const rule of detector.rules) {
    if (features !== undefined && !satisfies(features, rule.needIds)) continue;
    if (runRule(rule, s, all, out)) {
      found = true;
      if (!all) return true;
    }
  }
  return found;
}

/** `text` with each span (of the original) replaced by the marker; overlapping or touching spans merge. */
function replaceSpans(text: string, spans: Span[]): string {
  spans.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let out = "";
  let copied = 0;
  let open: [number, number] | undefined;
  const flush = () => {
    if (open === undefined) return;
    out += text.slice(copied, open[0]) + INJECTION_MARKER;
    copied = open[1];
  };
  for (const [start, end] of spans) {
    if (open !== undefined && start <= open[1]) {
      open[1] = Math.max(open[1], end);
      continue;
    }
    flush();
    open = [start, end];
  }
  flush();
  return out + text.slice(copied);
}

interface Enabled {
  detector: CompiledDetector;
  action: InjectionAction;
}

const NO_MATCH: { hits: ScreenHit[]; spans: Span[] } = Object.freeze({ hits: [], spans: [] });

/** True when at least one rule of `enabled` can run on a text with `features`. */
function anyRunnable(enabled: readonly Enabled[], features: Features): boolean {
  for (const { detector } of enabled) {
    for (const rule of detector.rules) if (satisfies(features, rule.needIds)) return true;
  }
  return false;
}

/** Runs `enabled` detectors on one reading `s`: adds the detectors that fired (once each) and the spans. */
function scan(
  s: ScanText,
  features: Features,
  enabled: readonly Enabled[],
  prefilter: boolean,
  hits: ScreenHit[],
  spans: Span[],
): void {
  if (prefilter && !anyRunnable(enabled, features)) return;
  const found: Span[] = [];
  for (const { detector, action } of enabled) {
    found.length = 0;
    const neutralize = action === "neutralize";
    const known = hits.some((h) => h.detector === detector.name);
    // A detector already found in another reading: only its spans are still wanted.
    if (known && !neutralize) continue;
    if (!detect(detector, prefilter ? features : undefined, s, neutralize, found)) continue;
    if (!known) hits.push({ detector: detector.name, action });
    if (neutralize) for (const [start, end] of found) spans.push(s.toOriginal(start, end));
  }
}

/**
 * Runs `enabled` detectors on `text` once: which fired, and the spans (of `text`) to neutralize. A text holding
 * characters that hide words is read folded, and when it holds tag characters or a right-to-left override also
 * as shown (./fold.ts); what either reading finds counts.
 */
function pass(
  text: string,
  enabled: readonly Enabled[],
  prefilter = true,
): { hits: ScreenHit[]; spans: Span[] } {
  const features = scanFeatures(text);
  if (!features.hiding && prefilter && !anyRunnable(enabled, features)) return NO_MATCH;
  const hits: ScreenHit[] = [];
  const spans: Span[] = [];
  if (!features.hiding) {
    scan(new ScanText(text, "plain"), features, enabled, prefilter, hits, spans);
    return { hits, spans };
  }
  const folded = new ScanText(text, "folded");
  scan(folded, scanFeatures(folded.text), enabled, prefilter, hits, spans);
  if (folded.layered) {
    const shown = new ScanText(text, "display");
    scan(shown, scanFeatures(shown.text), enabled, prefilter, hits, spans);
    const order = (h: ScreenHit) => enabled.findIndex((e) => e.detector.name === h.detector);
    hits.sort((a, b) => order(a) - order(b));
  }
  return hits.length === 0 ? NO_MATCH : { hits, spans };
}

function makeScreener(enabled: readonly Enabled[]): Screener {
  return Object.freeze({
    enabled: true,
    screen(text: string): ScreenResult {
      const first = pass(text, enabled);
      if (first.hits.length === 0) return { hits: first.hits, text, drop: false };
      const hits = first.hits;
      const drop = hits.some((h) => h.action === "drop");
      if (drop || first.spans.length === 0) return { hits, text, drop };
      let current = replaceSpans(text, first.spans);
      const neutralizing = enabled.filter((e) => e.action === "neutralize");
      for (let n = 1; ; n++) {
        const again = pass(current, neutralizing);
        if (again.spans.length === 0) break;
        for (const hit of again.hits) if (!hits.some((h) => h.detector === hit.detector)) hits.push(hit);
        if (n === MAX_PASSES) {
          // Still matching after this many passes (text built to outlast them): nothing of it is kept.
          current = INJECTION_MARKER;
          break;
        }
        current = replaceSpans(current, again.spans);
      }
      return { hits, text: current, drop: false };
    },
  });
}

/** Builds the screener for a policy's `injection` section (the no-op one when it is disabled). */
export function compileScreener(cfg: InjectionConfig): Screener {
  if (!cfg.enabled) return NOOP_SCREENER;
  const names = new Set<InjectionDetectorName>(cfg.detectors);
  const enabled: Enabled[] = COMPILED.filter((d) => names.has(d.name)).map((detector) => ({
    detector,
    action: cfg.actions[detector.name] ?? cfg.action,
  }));
  return makeScreener(enabled);
}

/**
 * Which detectors fire on `text`, by name, without applying any action: for `memgate eval-injection` and tests.
 * `detectors` defaults to every one.
 */
export function detectInjection(
  text: string,
  detectors: readonly InjectionDetectorName[] = INJECTION_DETECTOR_LIST.map((d) => d.name),
  options: DetectOptions = {},
): InjectionDetectorName[] {
  const names = new Set(detectors);
  const enabled = COMPILED.filter((d) => names.has(d.name)).map((detector) => ({
    detector,
    action: "flag" as const,
  }));
  return pass(text, enabled, options.prefilter !== false).hits.map((h) => h.detector);
}
