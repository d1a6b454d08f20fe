/**
 * Deterministic benchmark candidates: the same seed gives the same candidates on every host and Node version.
 *
 * Contents are generated from sentence templates: English chat, facts and summaries with the things the clip
 * stage has to get right (titles and abbreviations such as "Dr." and "e.g.", decimals, versions, times such as
 * "3 p.m.", URLs), some Chinese and Japanese, some mixed-script memories, exact-after-normalization duplicates
 * (the dedup stage's case) and a few memories holding PII (e-mail, phone, card, SSN, IPv4, IBAN, employee id).
 * Scores, timestamps, types and roles vary, so the threshold, interleave and format stages have work too.
 */
import type { Candidate, MemoryType, Role } from "../../src/pipeline/types";

/** A seeded PRNG (mulberry32): fast, 32-bit state, good enough to pick words. */
export class Rng {
  private state: number;

  constructor(seed: number) {
    this.state = seed >>> 0;
  }

  /** Uniform in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** Integer in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  pick<T>(items: readonly T[]): T {
    const item = items[Math.floor(this.next() * items.length)];
    if (item === undefined) throw new Error("pick from an empty list");
    return item;
  }

  chance(p: number): boolean {
    return this.next() < p;
  }
}

const FIRST = [
  "Alice",
  "Bob",
  "Priya",
  "Chen",
  "María",
  "Omar",
  "Yuki",
  "Lena",
  "Tom",
  "Fatima",
  "Noah",
  "Sofia",
];
const LAST = [
  "Smith",
  "Garcia",
  "Nguyen",
  "Müller",
  "Okafor",
  "Tanaka",
  "Rossi",
  "Kowalski",
  "Haddad",
  "Brown",
];
const TITLES = ["Dr.", "Mr.", "Mrs.", "Ms.", "Prof."];
const CITIES = [
  "Paris",
  "Lisbon",
  "Osaka",
  "Toronto",
  "Nairobi",
  "Berlin",
  "Austin",
  "São Paulo",
  "Melbourne",
];
const ORGS = ["Acme Inc.", "Globex Corp.", "Initech Ltd.", "Umbrella Co.", "Stark Bros."];
const FOODS = [
  "sushi",
  "pad thai",
  "lasagna",
  "falafel",
  "pho",
  "ramen",
  "tacos",
  "dal",
  "paella",
  "croissants",
];
const HOBBIES = [
  "rock climbing",
  "chess",
  "watercolor painting",
  "trail running",
  "baking sourdough",
  "the cello",
];
const PRODUCTS = ["the Pro plan", "the mobile app", "the API", "the dashboard", "the export tool", "SSO"];
const MONTHS = ["Jan.", "Feb.", "Mar.", "Apr.", "Aug.", "Sept.", "Oct.", "Nov.", "Dec."];
const PETS = ["a beagle named Max", "two cats", "a parrot", "a golden retriever", "a rescue greyhound"];
const WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"];

type Slots = Record<string, (r: Rng) => string>;

const SLOTS: Slots = {
  name: (r) => `${r.pick(FIRST)} ${r.pick(LAST)}`,
  first: (r) => r.pick(FIRST),
  title: (r) => `${r.pick(TITLES)} ${r.pick(LAST)}`,
  city: (r) => r.pick(CITIES),
  org: (r) => r.pick(ORGS),
  food: (r) => r.pick(FOODS),
  hobby: (r) => r.pick(HOBBIES),
  product: (r) => r.pick(PRODUCTS),
  month: (r) => r.pick(MONTHS),
  pet: (r) => r.pick(PETS),
  day: (r) => r.pick(WEEKDAYS),
  n: (r) => String(r.int(2, 48)),
  year: (r) => String(r.int(2019, 2026)),
  dec: (r) => `${r.int(1, 99)}.${r.int(0, 99)}`,
  money: (r) => `$${r.int(12, 4999)}.${String(r.int(0, 99)).padStart(2, "0")}`,
  version: (r) => `v${r.int(1, 9)}.${r.int(0, 20)}.${r.int(0, 30)}`,
  hour: (r) => String(r.int(1, 11)),
  pct: (r) => `${r.int(1, 99)}.${r.int(1, 9)}%`,
};

/** English sentences, one template each; `{slot}` is filled from `SLOTS`. */
const ENGLISH = [
  "My name is {name} and I live in {city}.",
  "I moved to {city} in {month} {year} for a job at {org}",
  "I'm allergic to peanuts, so please never suggest {food} with satay sauce.",
  "My favorite food is {food}, especially on {day}s.",
  "I have {pet} and we go to the park every morning at {hour} a.m. before work.",
  "{title} said my blood pressure was fine, i.e. nothing to worry about.",
  "We upgraded {product} to {version} last week and the latency dropped by {pct}.",
  "The invoice came to {money}, which is about {dec} times what we paid in {year}.",
  "Can you remind me to call {first} on {day} at {hour} p.m.?",
  "I've been learning {hobby} for {n} months now!",
  "Honestly... I think the new pricing for {product} is confusing.",
  "She works at {org} in the U.S. office, near the St. Lawrence river.",
  "The meeting with {title} moved to {day}, see https://calendar.example.com/e/{n} for details.",
  "I prefer short answers, e.g. bullet points, not long essays.",
  "We're planning a trip to {city} in {month} with {n} friends.",
  "My daughter turned {n} and she wants to try {hobby}.",
  "The report (Fig. {n}) shows revenue up {pct} vs. last year.",
  "Don't schedule anything before {hour} a.m. on weekdays.",
  "I switched from the free tier to {product} because of the {n} GB limit.",
  "My go-to order is {food} from the place on Main St. near the station.",
  "Is it possible to export everything as CSV?",
  "The build failed on {version} with error code {n}, but {version} works fine.",
  "I usually run {dec} km on {day}s and rest on weekends.",
  "{first} from {org} recommended {product} to our team.",
  "My partner and I are vegetarian, so no meat in recipe ideas please.",
  "I read J. R. R. Tolkien every winter; this year it's The Silmarillion.",
  "The temperature in {city} was {dec} degrees at {hour} p.m. Then it rained all evening.",
  "I need the summary by {day} at the latest, ideally in {n} bullet points.",
];

/** Chinese and Japanese sentences (written without spaces between sentences). */
const CJK = [
  "我住在上海，每天早上坐地铁去公司。",
  "我对花生过敏，请不要推荐含花生的菜。",
  "下周三我要去北京出差，大概三天。",
  "我女儿今年八岁，喜欢画画和游泳。",
  "请用简短的要点回答我的问题。",
  "我们公司上个月升级了系统，速度快了很多！",
  "東京に住んでいて、毎朝ジョギングをしています。",
  "辛い食べ物は苦手なので、避けてください。",
  "来月、大阪の友達に会いに行く予定です。",
  "猫を二匹飼っています。名前はミケとタマです。",
  "会議は金曜日の午後三時に変更されました。",
  "한국어도 조금 할 수 있어요. 주말에는 등산을 가요.",
];

/** PII as it shows up in memories; the digits vary per use. Card numbers are Luhn-valid. */
const PII: Array<(r: Rng) => string> = [
  (r) =>
    `You can reach me at ${r.pick(FIRST).toLowerCase()}.${r.pick(LAST).toLowerCase()}${r.int(1, 99)}@example.com anytime.`,
  (r) => `My cell is (415) 555-${String(r.int(100, 9999)).padStart(4, "0")} if the app is down.`,
  () => "Please bill the card 4111 1111 1111 1111 for the renewal.",
  (r) => `My SSN is ${r.int(100, 665)}-${r.int(10, 99)}-${r.int(1000, 9999)}, needed for the tax form.`,
  (r) => `The office VPN gateway is 10.${r.int(0, 255)}.${r.int(0, 255)}.${r.int(1, 254)} now.`,
  () => "Wire it to DE89 3704 0044 0532 0130 00 please.",
  (r) => `HR lists me as EMP-${r.int(100000, 999999)} in the directory.`,
  (r) => `Call the London office on +44 20 7946 ${String(r.int(0, 9999)).padStart(4, "0")} after lunch.`,
];

const SLOT = /\{(\w+)\}/g;

function fill(template: string, r: Rng): string {
  return template.replace(SLOT, (_, name: string) => {
    const slot = SLOTS[name];
    if (slot === undefined) throw new Error(`unknown slot {${name}}`);
    return slot(r);
  });
}

type Script = "english" | "cjk" | "mixed";

/** Whole sentences, as close to `target` UTF-16 code units as sentence lengths allow (at least one). */
function content(r: Rng, target: number, script: Script, pii: boolean): string {
  const parts: string[] = [];
  let length = 0;
  let piiAt = pii ? r.int(0, 3) : -1;
  while (length < target) {
    let sentence: string;
    let joiner = " ";
    if (parts.length === piiAt) {
      sentence = r.pick(PII)(r);
      piiAt = -1;
    } else if (script === "cjk" || (script === "mixed" && r.chance(0.4))) {
      sentence = r.pick(CJK);
      joiner = script === "cjk" ? "" : " ";
    } else {
      sentence = fill(r.pick(ENGLISH), r);
      // Chat text: a paragraph break now and then.
      if (parts.length > 0 && r.chance(0.08)) joiner = "\n\n";
    }
    const piece = parts.length === 0 ? sentence : joiner + sentence;
    // Stop at whichever of "without" and "with" this sentence is closer to the target.
    if (parts.length > 0 && length + piece.length - target > target - length) break;
    parts.push(piece);
    length += piece.length;
  }
  return parts.join("");
}

/** A variant that normalizes (lowercase, NFKC, collapsed whitespace, trimmed punctuation) to the same hash. */
function nearDuplicate(text: string, r: Rng): string {
  const variant = r.int(0, 2);
  if (variant === 0) return text.toUpperCase();
  if (variant === 1) return `  ${text.replace(/ /g, "  ")} `;
  return `"${text}"!!`;
}

const EPOCH = Date.UTC(2026, 0, 1);
const DAY_MS = 86_400_000;

export interface CorpusOptions {
  /** How many candidates (what one backend call returns). */
  count: number;
  /** Target length of each content in UTF-16 code units (actual: within about half a sentence of it). */
  chars: number;
  seed?: number;
}

/**
 * One retrieval's worth of candidates. About 1 in 8 is a near-duplicate of an earlier one, 1 in 5 holds PII,
 * 1 in 8 is Chinese/Japanese/Korean and 1 in 10 mixes scripts; scores span 0.05–0.99 so the default
 * `minScore: 0.3` drops some; timestamps span the year before 2026-01-01.
 */
export function makeCandidates({ count, chars, seed = 1 }: CorpusOptions): Candidate[] {
  const r = new Rng(seed);
  const out: Candidate[] = [];
  for (let i = 0; i < count; i++) {
    const roll = r.next();
    const type: MemoryType = roll < 0.5 ? "message" : roll < 0.85 ? "fact" : "summary";
    const source = out.length > 0 && r.chance(0.125) ? r.pick(out) : undefined;
    let text: string;
    if (source !== undefined) {
      text = nearDuplicate(source.content, r);
    } else {
      const s = r.next();
      const script: Script = s < 0.125 ? "cjk" : s < 0.225 ? "mixed" : "english";
      text = content(r, chars, script, r.chance(0.2));
    }
    const candidate: Candidate = {
      id: `mem-${seed.toString(36)}-${String(i).padStart(4, "0")}`,
      content: text,
      score: Math.round((0.05 + 0.94 * r.next() ** 0.7) * 1e4) / 1e4,
      timestamp: new Date(EPOCH - r.int(0, 365 * DAY_MS)).toISOString(),
      sessionId: `sess-${r.int(1, 40)}`,
      type,
      backend: "local",
    };
    if (type === "message") {
      candidate.role = r.chance(0.6) ? ("user" satisfies Role) : ("assistant" satisfies Role);
      candidate.messageId = `msg-${r.int(1, 1e6)}`;
    }
    out.push(candidate);
  }
  return out;
}

/**
 * `sets` different retrievals of the same shape (seeds `seed`, `seed + 1`, …), for benches that rotate through
 * inputs so no cache (BPE merge cache, RE2's UTF-8 copy, V8 inline caches on one string) sees one input only.
 */
export function makeCandidateSets(opts: CorpusOptions & { sets: number }): Candidate[][] {
  const base = opts.seed ?? 1;
  return Array.from({ length: opts.sets }, (_, k) => makeCandidates({ ...opts, seed: base + k }));
}

/**
 * The candidate list of call `i`, rotating through `sets`. With `fresh`, every call's texts are new: a token of the
 * call's own before every sentence end, so no sentence, memory or clipped text was seen before (the scripts'
 * `--fresh`).
 */
export function rotatingCandidates(sets: readonly Candidate[][], fresh: boolean): (i: number) => Candidate[] {
  let serial = 0;
  return (i) => {
    const set = sets[i % sets.length] ?? [];
    if (!fresh) return set;
    serial++;
    return set.map((c) => ({
      ...c,
      content: c.content.replace(/[.!?。！？]/g, (end) => ` q${serial}${end}`),
    }));
  };
}

/** Facts about a set of candidate lists, to print next to the timings (what was actually measured). */
export function describeCorpus(sets: readonly (readonly Candidate[])[]): {
  candidates: number;
  meanChars: number;
  minChars: number;
  maxChars: number;
} {
  let n = 0;
  let total = 0;
  let min = Number.POSITIVE_INFINITY;
  let max = 0;
  for (const set of sets) {
    for (const c of set) {
      n++;
      total += c.content.length;
      min = Math.min(min, c.content.length);
      max = Math.max(max, c.content.length);
    }
  }
  return {
    candidates: n / Math.max(1, sets.length),
    meanChars: n === 0 ? 0 : total / n,
    minChars: min,
    maxChars: max,
  };
}
