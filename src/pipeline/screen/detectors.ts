import type { InjectionDetectorName } from "../../policy/schema";
import type { Feature } from "./features";
import { firstAtLeast, type ScanText, type Span } from "./text";

/**
 * Injection detectors (policy `injection.detectors`): instruction-like content in a recalled memory, told by
 * its shape. Deterministic and explainable: each detector is a short list of rules, a rule is a regular
 * expression plus, where the shape needs context, a check of the few characters around the match.
 *
 * Every pattern runs in time linear in the text: JS RegExps whose repetitions are all bounded (`\s{1,3}`,
 * `{0,400}`) and never nest, so at one start position the engine has a bounded number of ways to try, and
 * whose context checks look at most a few hundred characters around a match. A rule also names the trigger
 * words or characters the text must hold (features.ts), so ordinary text skips the patterns without running them.
 *
 * Matched text never leaves this module except as a span to neutralize: traces, spans and metrics name the
 * detector only.
 */

export interface Rule {
  /** Global, usually `giu`. */
  readonly re: RegExp;
  /**
   * Features (features.ts) the text must hold for the pattern to run: one of each group. Every text the
   * pattern can match holds them; a test checks it on the labelled corpus.
   */
  readonly need?: readonly (readonly Feature[])[];
  /** Context check of a raw match `[start, end)` of `s.text`. */
  readonly accept?: (s: ScanText, start: number, end: number) => boolean;
  /** What `neutralize` replaces (default: the match itself). */
  readonly span?: (s: ScanText, start: number, end: number) => Span;
}

export interface InjectionDetector {
  readonly name: InjectionDetectorName;
  /** One line for docs and `memgate eval-injection`. */
  readonly summary: string;
  readonly rules: readonly Rule[];
}

// ---- building blocks ----------------------------------------------------------------------------------

/** Not preceded by a letter, digit or `_` (a word start in any script). */
const WB = "(?<![\\p{L}\\p{N}_])";
/** Not followed by a letter, digit or `_`. */
const WE = "(?![\\p{L}\\p{N}_])";

/** A phrase: a space is 1–3 whitespace characters, `'` either apostrophe. */
function phrase(source: string): string {
  return source.replace(/ /g, "\\s{1,3}").replace(/'/g, "['’]");
}

/** An alternation of phrases. */
function alt(words: readonly string[]): string {
  return `(?:${words.map(phrase).join("|")})`;
}

function re(source: string, flags = "giu"): RegExp {
  return new RegExp(source, flags);
}

/** Characters that may decorate the start of a line before a label: indentation, list and quote marks, bold. */
const DECORATION = " \t*_>#-[(\"'“«「【";
/** Sentence terminators after which a label counts as starting a sentence. */
const TERMINATORS = ".!?。！？";

/**
 * True when `start` begins a line (after optional decoration) or, with `sentence`, a sentence (after a
 * terminator and optional spaces or decoration).
 */
function atStart(text: string, start: number, sentence: boolean): boolean {
  let i = start;
  for (let n = 0; i > 0 && n < 16 && DECORATION.includes(text[i - 1] ?? ""); n++) i--;
  if (i === 0) return true;
  const before = text[i - 1] ?? "";
  if (before === "\n" || before === "\r") return true;
  return sentence && TERMINATORS.includes(before);
}

const lineStart = (s: ScanText, start: number) => atStart(s.text, start, false);
const lineOrSentenceStart = (s: ScanText, start: number) => atStart(s.text, start, true);

/** A `Label: value` line whose label is not a role: a line of a listing ("RAM: 16 GB", "Release: 2017"). */
const LISTING_LINE = /^[ \t*_>-]{0,8}[\p{L}][\p{L}\p{N} _/().-]{0,30}[ \t]{0,2}[:：][ \t]*\S/u;
const ROLE_LINE = /^[ \t*_>#-]{0,8}(?:system|assistant|user|human|developer)\b/i;

/**
 * The line before or after the one holding `at` is a listing line. Only lines within reach count: the current
 * line is searched at most 400 characters either way and a neighbour is at most 200 characters long, so the
 * check reads a bounded window whatever the text.
 */
function besideListing(text: string, at: number): boolean {
  let start = at;
  while (start > 0 && at - start < 400 && text[start - 1] !== "\n") start--;
  let end = at;
  while (end < text.length && end - at < 400 && text[end] !== "\n") end++;
  const lines: string[] = [];
  if (start > 0 && text[start - 1] === "\n") {
    let prev = start - 1;
    while (prev > 0 && start - 1 - prev < 200 && text[prev - 1] !== "\n") prev--;
    if (prev === 0 || text[prev - 1] === "\n") lines.push(text.slice(prev, start - 1));
  }
  if (end < text.length && text[end] === "\n") {
    let next = end + 1;
    while (next < text.length && next - end - 1 < 200 && text[next] !== "\n") next++;
    if (next === text.length || text[next] === "\n") lines.push(text.slice(end + 1, next));
  }
  return lines.some((line) => LISTING_LINE.test(line) && !ROLE_LINE.test(line));
}

/**
 * A role label as chat transcripts write it: capitalized ("System:", "SYSTEM:"), starting a line or sentence,
 * outside code (`user: {` and `system: true` are object keys), and not a short line of a listing of other
 * labels ("System: Ubuntu 22.04" between "CPU: …" and "RAM: …").
 */
function roleLabel(s: ScanText, start: number): boolean {
  const first = s.text[start] ?? "";
  if (first === first.toLowerCase() || !atStart(s.text, start, true) || s.inCode(start)) return false;
  if (!s.spend(1200)) return true;
  const rest = s.text.slice(start, start + 61);
  const newline = rest.indexOf("\n");
  return (newline === -1 ? rest.length : newline) > 60 || !besideListing(s.text, start);
}

/**
 * Words that may stand right before an order to the model: politeness, conjunctions, modals, a vocative
 * ("assistant, …" without the comma), in the languages of the override patterns.
 */
const LEAD_INS = new Set(
  [
    // en
    "please pls plz kindly so and or but must should shall will can could would to hereby important urgent note",
    "warning attention ai assistant bot chatbot model gpt chatgpt claude gemini llm hey hi ok okay well therefore",
    "thus hence actually seriously yes sure alright instead next finally system user human developer",
    // es, fr, de, pt, it
    "favor y o pero entonces debes debe deberías tienes tiene que hay oye hola asistente ia importante urgente nota",
    "plaît et ou mais alors donc dois doit devez devrais faut qu bien",
    "bitte und oder aber dann also musst muss müssen sollst sollen solltest ki assistent hallo wichtig achtung hinweis",
    "e mas então depois deves precisa precisas tem olá ola oi atenção",
    "favore ma poi quindi devi dovete che di ciao attenzione",
  ]
    .join(" ")
    .split(" "),
);

/** Words skipped on the way back (adverbs, the addressee): what stands before them decides. */
const SKIPPED = new Set(
  [
    "always just simply also now then really completely totally fully immediately first entirely you",
    "ahora luego simplemente solo sólo también inmediatamente tú usted",
    "maintenant désormais puis simplement juste aussi immédiatement tu vous",
    "jetzt nun sofort einfach auch zuerst du sie",
    "agora apenas só também imediatamente você voce",
    "ora adesso subito semplicemente anche tu lei",
  ]
    .join(" ")
    .split(" "),
);

const LETTER = /[\p{L}\p{M}]/u;

/**
 * True when a verb at `start` reads as an order: it starts a clause (text start, after punctuation or a line
 * break), or follows a lead-in ("please", "and", "you must", "I want you to"), possibly past adverbs and the
 * addressee ("now", "you", "simplemente"). Anything else is a statement about someone: "my boss ignora las
 * instrucciones anteriores", "if you ignore the previous instructions, the cake burns", "don't ignore …".
 */
function imperative(s: ScanText, start: number): boolean {
  const { text } = s;
  let i = start;
  for (let n = 0; n < 4; n++) {
    while (i > 0 && /\s/.test(text[i - 1] ?? "")) i--;
    if (i === 0 || !LETTER.test(text[i - 1] ?? "")) return true;
    let j = i;
    while (j > 0 && i - j < 24 && LETTER.test(text[j - 1] ?? "")) j--;
    const word = text.slice(j, i).toLowerCase();
    if (LEAD_INS.has(word)) return true;
    if (!SKIPPED.has(word)) return false;
    i = j;
  }
  return false;
}

// ---- role_marker --------------------------------------------------------------------------------------

const ROLE_LABEL = re(
  `${WB}(?:(?:system|assistant|user|human)(?:[ \\t]{1,3}(?:prompt|message|note|notice|instructions?|override|update|alert))?|developer[ \\t]{1,3}(?:prompt|message|instructions?))[ \\t]{0,3}(?:\\*\\*|__)?[ \\t]{0,2}[:：]`,
);
const ROLE_HEADING = re(
  "#{1,6}[ \\t]{0,3}(?:(?:system|assistant|human)(?:[ \\t]{1,3}(?:prompt|message|instructions?))?[ \\t]{0,3}(?=[\\r\\n]|$)|(?:instructions?|response)[ \\t]{0,3}[:：])",
);
/** Chat-template control tokens of common model families, anywhere in the text. */
const CHAT_TOKENS = re(
  "<[|｜][^<>|｜\\s]{1,40}[|｜]>|\\[\\/?INST\\]|<<\\/?SYS>>|<\\/?(?:start_of_turn|end_of_turn)>",
);
/** A chat message as JSON claiming a privileged role. */
const ROLE_JSON = re("[\"'“”]role[\"'“”]\\s{0,3}:\\s{0,3}[\"'“”](?:system|developer|assistant)[\"'“”]");

const roleMarker: InjectionDetector = {
  name: "role_marker",
  summary:
    'a role label starting a line or sentence ("System:", "Assistant:", "### System"), a chat-template token (<|im_start|>, [INST], <<SYS>>) or a {"role": "system"} message',
  rules: [
    {
      re: ROLE_LABEL,
      need: [["role_word"], ["colon"]],
      accept: roleLabel,
    },
    { re: ROLE_HEADING, need: [["hash"]], accept: lineStart },
    { re: CHAT_TOKENS, need: [["lt", "lsquare"]] },
    { re: ROLE_JSON, need: [["role_key"], ["quote"]] },
  ],
};

// ---- instruction_override -----------------------------------------------------------------------------

/** Per language: the "ignore the previous instructions" family, built from verbs, determiners and nouns. */
interface OverrideLanguage {
  verbs: readonly string[];
  determiners: readonly string[];
  nouns: readonly string[];
  /** Qualifiers before the noun ("previous instructions"). */
  before: readonly string[];
  /** Qualifiers after the noun ("instructions above", "instrucciones anteriores"). */
  after: readonly string[];
  /** The features of the language's verbs and nouns (features.ts). */
  need: readonly (readonly Feature[])[];
}

function overrideRule(l: OverrideLanguage): Rule {
  const dets = `(?:\\s{1,3}${alt(l.determiners)}){0,3}`;
  const qualified = [
    ...(l.before.length > 0 ? [`${alt(l.before)}\\s{1,3}${alt(l.nouns)}`] : []),
    ...(l.after.length > 0 ? [`${alt(l.nouns)}\\s{1,3}${alt(l.after)}`] : []),
  ];
  return {
    re: re(`${WB}${alt(l.verbs)}${dets}\\s{1,3}(?:${qualified.join("|")})${WE}`),
    need: l.need,
    accept: imperative,
  };
}

const EN: OverrideLanguage = {
  verbs: [
    "ignore",
    "disregard",
    "forget",
    "discard",
    "neglect",
    "abandon",
    "set aside",
    "pay no attention to",
    "do not follow",
    "don't follow",
    "stop following",
  ],
  determiners: ["all", "any", "every", "the", "your", "of", "these", "those", "such"],
  nouns: [
    "instructions?",
    "prompts?",
    "system prompts?",
    "directions",
    "directives?",
    "guidelines",
    "commands",
    "rules",
    "context",
    "constraints",
    "guidance",
    "programming",
  ],
  before: [
    "previous",
    "prior",
    "above",
    "earlier",
    "preceding",
    "foregoing",
    "former",
    "initial",
    "aforementioned",
    "above-mentioned",
  ],
  after: [
    "above",
    "before this",
    "so far",
    "given (?:above|before|earlier|to you)",
    "you (?:were|have been|'ve been) given",
    "from (?:before|earlier|your (?:developers?|creators?|system))",
  ],
  need: [["en_verb"], ["en_noun"]],
};

const ES: OverrideLanguage = {
  verbs: [
    "ignora",
    "ignore",
    "ignoren",
    "ignorar",
    "ignores",
    "ignorad",
    "olvides",
    "olvida",
    "olvide",
    "olviden",
    "olvidar",
    "olvídate de",
    "olvídese de",
    "descarta",
    "descarte",
    "omite",
    "omita",
    "desestima",
    "desatiende",
    "no sigas",
    "no siga",
    "no hagas caso (?:a|de)",
    "haz caso omiso (?:a|de)",
  ],
  determiners: ["todas", "todos", "las", "los", "tus", "sus", "estas", "esas", "de", "a", "del", "cualquier"],
  nouns: [
    "instrucciones",
    "indicaciones",
    "órdenes",
    "ordenes",
    "directrices",
    "directivas",
    "reglas",
    "normas",
    "pautas",
    "consignas",
    "prompts?",
  ],
  before: ["anteriores", "previas"],
  after: [
    "anteriores",
    "previas",
    "precedentes",
    "de (?:arriba|antes)",
    "originales",
    "iniciales",
    "del sistema",
    "que (?:te )?(?:dieron|han dado|recibiste)",
  ],
  need: [["es_verb"], ["es_noun"]],
};

const FR: OverrideLanguage = {
  verbs: [
    "ignore",
    "ignorez",
    "ignorer",
    "ignores",
    "oublies",
    "oublie",
    "oubliez",
    "oublier",
    "néglige",
    "négligez",
    "écarte",
    "écartez",
    "ne (?:tiens|tenez) pas compte (?:de|des|du)",
    "(?:fais|faites) abstraction (?:de|des|du)",
    "passe outre",
    "passez outre",
    "ne (?:suis|suivez) (?:pas|plus)",
  ],
  determiners: ["toutes", "tous", "les", "tes", "vos", "ces", "des", "de", "du", "à", "aux"],
  nouns: [
    "instructions",
    "consignes",
    "directives",
    "règles",
    "ordres",
    "indications",
    "prompts?",
    "commandes",
  ],
  before: ["précédentes", "précédents"],
  after: [
    "précédentes",
    "précédents",
    "antérieures",
    "antérieurs",
    "ci-dessus",
    "d'avant",
    "initiales",
    "initiaux",
    "originales",
    "du système",
    "(?:qu'on t'a|qui t'ont été|qui vous ont été) données",
    "données (?:précédemment|auparavant|plus haut|avant)",
  ],
  need: [["fr_verb"], ["fr_noun"]],
};

const DE: OverrideLanguage = {
  verbs: [
    "ignoriere",
    "ignorier",
    "ignorieren Sie",
    "vergiss",
    "vergessen Sie",
    "missachte",
    "missachten Sie",
    "verwirf",
    "verwerfen Sie",
    "übergehe",
    "übergehen Sie",
    "befolge nicht mehr",
  ],
  determiners: ["alle", "die", "deine", "ihre", "sämtliche", "jegliche", "der", "den", "dem", "bisher"],
  nouns: [
    "Anweisungen",
    "Anweisung",
    "Instruktionen",
    "Befehle",
    "Anordnungen",
    "Vorgaben",
    "Regeln",
    "Richtlinien",
    "Prompts?",
    "Systemanweisungen",
    "Systemprompts?",
  ],
  before: [
    "(?:vorherig|bisherig|obig|vorig|früher|vorangegangen|vorhergehend|vorstehend|ursprünglich|anfänglich)(?:e|en|er|es)?",
  ],
  after: ["oben", "davor", "zuvor", "von (?:vorher|oben|zuvor)"],
  need: [["de_verb"], ["de_noun"]],
};

const PT: OverrideLanguage = {
  verbs: [
    "ignore",
    "ignora",
    "ignorem",
    "ignorar",
    "ignores",
    "esqueças",
    "esqueça",
    "esquece",
    "esqueçam",
    "esquecer",
    "desconsidere",
    "desconsidera",
    "despreze",
    "descarte",
    "descarta",
    "não (?:siga|sigas|obedeça)",
  ],
  determiners: [
    "todas",
    "todos",
    "as",
    "os",
    "suas",
    "tuas",
    "essas",
    "estas",
    "de",
    "das",
    "dos",
    "quaisquer",
  ],
  nouns: [
    "instruções",
    "instrucoes",
    "orientações",
    "orientacoes",
    "ordens",
    "diretrizes",
    "diretivas",
    "regras",
    "comandos",
    "prompts?",
  ],
  before: ["anteriores", "prévias"],
  after: [
    "anteriores",
    "prévias",
    "previas",
    "acima",
    "originais",
    "iniciais",
    "do sistema",
    "precedentes",
    "que (?:te|lhe) (?:deram|foram dadas)",
  ],
  need: [["pt_verb"], ["pt_noun"]],
};

const IT: OverrideLanguage = {
  verbs: [
    "ignora",
    "ignori",
    "ignorate",
    "ignorare",
    "dimentica",
    "dimentichi",
    "dimenticate",
    "dimenticare",
    "trascura",
    "trascurate",
    "scarta",
    "non (?:seguire|seguite|considerare|considerate)",
    "non tenere conto (?:di|delle|dei|degli)",
    "lascia perdere",
  ],
  determiners: [
    "tutte",
    "tutti",
    "le",
    "gli",
    "i",
    "tue",
    "sue",
    "queste",
    "quelle",
    "di",
    "delle",
    "degli",
    "dei",
    "qualsiasi",
  ],
  nouns: ["istruzioni", "indicazioni", "direttive", "regole", "ordini", "comandi", "prompt", "consegne"],
  before: ["precedenti"],
  after: [
    "precedenti",
    "sopra",
    "di prima",
    "originali",
    "iniziali",
    "del sistema",
    "anteriori",
    "ricevute (?:prima|finora|in precedenza)",
    "che ti (?:hanno dato|sono state date)",
  ],
  need: [["it_verb"], ["it_noun"]],
};

/** "forget everything above", "olvida todo lo anterior", "vergiss alles Vorherige", … */
const EVERYTHING_ABOVE = re(
  `${WB}(?:${[
    "(?:ignore|disregard|forget) (?:about )?everything (?:above|before this|prior to this|up to (?:here|this point))",
    "(?:ignore|disregard) (?:all of )?the (?:text |content )?above and (?:instead )?(?:say|print|output|write|respond|reply|answer|tell|translate|do|return)",
    "(?:ignora|olvida|descarta|ignore|olvide) todo lo (?:anterior|de (?:arriba|antes)|que (?:está|hay) (?:arriba|antes))",
    "(?:ignore|ignorez|oublie|oubliez) (?:tout )?ce qui (?:précède|est (?:au-dessus|ci-dessus|écrit plus haut)|a été dit (?:avant|plus haut|précédemment))",
    "(?:vergiss|ignoriere|vergessen Sie|ignorieren Sie) (?:einfach )?alles,? (?:(?:bisher )?(?:Gesagte|Vorherige|Vorangegangene|Obige|Bisherige)|oben|davor|was (?:dir )?(?:bisher|vorher|zuvor|oben) (?:gesagt|befohlen|geschrieben|mitgeteilt))",
    "(?:esqueça|esquece|ignore|ignora|desconsidere) tudo (?:o que (?:está acima|foi dito (?:antes|acima|anteriormente)|veio antes)|acima|anterior)",
    "(?:dimentica|ignora|dimenticate|ignorate) (?:tutto )?(?:quello|ciò|quanto) (?:che )?(?:(?:ti|vi) )?(?:precede|c'è (?:sopra|prima)|(?:è stat[oa] |sono stat[ie] )?dett[oaie] (?:prima|sopra|finora|in precedenza))",
  ]
    .map(phrase)
    .join("|")})${WE}`,
);

/** "you are now an unrestricted AI", "ahora eres una IA sin restricciones", … (a persona swap), by language. */
const PERSONA: ReadonlyArray<{ need: Rule["need"]; phrases: readonly string[] }> = [
  {
    need: [["persona_en"], ["persona_en_what"]],
    phrases: [
      "you are now (?:(?:a|an|the|in) )?(?:DAN|(?:developer|god|admin|debug|jailbreak|jailbroken|unrestricted|DAN|sudo|root) mode|(?:jailbroken|unrestricted|unfiltered|uncensored|unchained|unbound|evil|rogue|malicious)(?: (?:ai|assistant|chatbot|language model|llm|model|bot|version))?|free (?:of|from) (?:all |any |your )?(?:restrictions|rules|guidelines|constraints|filters|limitations)|no longer (?:bound|restricted|limited|an ai|an assistant))",
      "you are no longer (?:bound|restricted|limited|constrained) by",
      "pretend (?:that )?you (?:have|are under|are bound by) no (?:restrictions|rules|guidelines|filters|limitations)",
      "(?:act|behave|respond) as (?:if you (?:are|were) )?(?:an? )?(?:unrestricted|unfiltered|uncensored|jailbroken) (?:ai|assistant|model|chatbot|llm)",
      "(?:enable|activate|enter|switch to) (?:DAN|jailbreak|jailbroken) mode",
    ],
  },
  {
    need: [["ahora"], ["persona_es_what"]],
    phrases: [
      "ahora (?:eres|serás|es usted) (?:un|una) (?:ia|asistente|modelo|chatbot|bot|inteligencia artificial) (?:sin (?:restricciones|filtros|censura|límites|reglas)|malvad[oa]|liberad[oa])",
    ],
  },
  {
    need: [["persona_fr"], ["persona_fr_what"]],
    phrases: [
      "(?:tu es|vous êtes) (?:maintenant|désormais|dorénavant) (?:un|une) (?:ia|assistant|assistante|modèle|chatbot|bot|intelligence artificielle) (?:sans (?:restrictions?|filtres?|limites?|censure|règles)|malveillante?|libérée?)",
    ],
  },
  {
    need: [["persona_de"], ["ohne"]],
    phrases: [
      "(?:du bist|Sie sind) (?:jetzt|nun|ab sofort) (?:ein|eine) (?:KI|Assistent|Assistentin|Modell|Chatbot|Bot) ohne (?:Einschränkungen|Filter|Regeln|Grenzen|Zensur|Beschränkungen)",
    ],
  },
  {
    need: [["agora"], ["sem"]],
    phrases: [
      "(?:você agora é|agora (?:você )?é|tu agora és|agora és) (?:um|uma) (?:ia|assistente|modelo|chatbot|bot|inteligência artificial) sem (?:restrições|filtros|censura|limites|regras)",
    ],
  },
  {
    need: [["persona_it"], ["senza"]],
    phrases: [
      "(?:ora|adesso|da ora in poi) (?:sei|tu sei) (?:un'\\s{0,3}|(?:un|una) )(?:ia|assistente|modello|chatbot|bot|intelligenza artificiale) senza (?:restrizioni|filtri|censura|limiti|regole)",
    ],
  },
];

/** "New instructions:", "Nuevas instrucciones:", "SYSTEM OVERRIDE:" starting a line or sentence. */
const NEW_INSTRUCTIONS = re(
  `${WB}(?:${[
    "(?:new|updated|revised|real|actual|true|secret|hidden) (?:system )?(?:instructions?|directives?|system prompt)",
    "(?:system|admin|developer) override",
    "(?:nuevas|verdaderas|auténticas|actualizadas) (?:instrucciones|directrices|indicaciones)(?: del sistema)?",
    "(?:nouvelles|vraies|véritables) (?:instructions|consignes|directives)(?: (?:du )?système)?",
    "(?:neue|echte|wahre|tatsächliche|aktualisierte) (?:Anweisungen|Instruktionen|Befehle|Systemanweisungen|Vorgaben)",
    "(?:novas|verdadeiras|reais) (?:instruções|diretrizes|ordens)(?: do sistema)?",
    "(?:nuove|vere|autentiche) (?:istruzioni|direttive|indicazioni)(?: (?:di|del) sistema)?",
  ]
    .map(phrase)
    .join("|")})(?:\\*\\*|__)?\\s{0,3}[:：]`,
);

/**
 * Instructions said to come from whoever runs the model, starting a line or sentence and ending in a colon:
 * "New instructions from the operator:", "Instructions from your developers follow:", "Nuevas instrucciones del
 * operador:", "Neue Anweisungen vom Betreiber:", … An authority of the model, not a person: "instructions from
 * the landlord" pass.
 */
const FROM_AUTHORITY = re(
  `${WB}(?:(?:important|urgent|attention|note|notice|warning)[ \\t]{0,3}[-—–:!,]?[ \\t]{0,3})?(?:${[
    "(?:(?:new|updated|revised|real|actual|true|secret|hidden|urgent|important|special) )?(?:system )?(?:instructions?|directives?|orders|commands|rules|system prompt) (?:from|by) (?:the |your |our |an? )?(?:(?:system|platform|site|bot|ai|model|chatbot|assistant|security|dev|development) )?(?:operators?|administrators?|admins?|sysadmins?|developers?|devs|dev team|creators?|owners?|maintainers?|providers?|moderators?|system|openai|anthropic)",
    "(?:(?:nuevas|verdaderas|auténticas|actualizadas) )?(?:instrucciones|directrices|indicaciones|órdenes|ordenes) (?:del|de la|de los|de tu|de su) (?:operador|operadora|administrador|administradora|desarrolladores|desarrollador|sistema|propietario|creadores|creador)",
    "(?:(?:nouvelles|vraies|véritables) )?(?:instructions|consignes|directives|ordres) (?:de l'|du |de la |des |de ton |de votre )(?:opérateur|opératrice|administrateur|administratrice|développeurs|développeur|système|propriétaire|créateurs|créateur)",
    "(?:(?:neue|echte|wahre|tatsächliche|aktualisierte) )?(?:Anweisungen|Instruktionen|Befehle|Systemanweisungen|Vorgaben) (?:vom|von der|von den|von deinem|von Ihrem|des) (?:Betreibers?|Administrators?|Admins?|Entwicklern|Entwicklers?|Systems?|Eigentümers?)",
    "(?:(?:novas|verdadeiras|reais) )?(?:instruções|instrucoes|diretrizes|ordens) (?:do|da|dos|das) (?:operador|operadora|administrador|administradora|desenvolvedores|desenvolvedor|sistema|proprietário|criadores|criador)",
    "(?:(?:nuove|vere|autentiche) )?(?:istruzioni|direttive|indicazioni|ordini) (?:dall'|dell'|dal |del |dalla |della |dagli |degli )(?:operatore|operatrice|amministratore|amministratrice|sviluppatori|sviluppatore|sistema|proprietario|creatori|creatore)",
  ]
    .map(phrase)
    .join(
      "|",
    )})(?:\\s{1,3}(?:follow|below|are as follows|siguen|suivent|folgen|seguem|seguono))?(?:\\*\\*|__)?\\s{0,3}[:：]`,
);

/** "reveal your system prompt", "repeat the words above verbatim", … (a prompt-leak request). */
const REVEAL = re(
  `${WB}(?:${[
    "(?:reveal|print|show|repeat|output|leak|display|dump|disclose|recite|tell me|give me|write (?:out|down)) (?:(?:me|us) )?your (?:(?:full|entire|complete|exact|original|initial|hidden|secret|verbatim) )?(?:system prompt|(?:initial|original|hidden|secret|system) instructions|instructions (?:verbatim|word for word)|prompt verbatim)",
    "repeat (?:all )?(?:of )?the (?:text|words|content|instructions) above (?:verbatim|word for word|starting with|in a code block)",
    "(?:revela|muestra|muéstrame|imprime|repite|dime) (?:tu|tus) (?:prompt del sistema|system prompt|instrucciones (?:del sistema|iniciales|ocultas|originales))",
    "(?:révèle|révélez|affiche|affichez|montre|montrez|répète|répétez|donne|donnez)(?:-moi)? (?:moi )?(?:ton|votre|tes|vos) (?:prompt (?:système|du système|initial)|instructions (?:système|initiales|cachées|secrètes))",
    "(?:zeige|zeig|gib|nenne|wiederhole|verrate)(?: mir)? (?:deinen|deine|Ihren|Ihre) (?:Systemprompt|System-Prompt|Systemanweisungen|ursprünglichen Anweisungen|versteckten Anweisungen)",
    "(?:revele|mostre|mostra|imprima|repita|diga)(?:-me)? (?:o )?(?:seu|teu|suas|tuas) (?:prompt (?:do|de) sistema|instruções (?:do sistema|iniciais|ocultas|originais))",
    "(?:rivela|mostra|mostrami|stampa|ripeti|dimmi) (?:il )?(?:tuo|tuoi|tue) (?:prompt (?:di|del) sistema|istruzioni (?:di sistema|del sistema|iniziali|nascoste|originali))",
  ]
    .map(phrase)
    .join("|")})${WE}`,
);

/** "Ignore your instructions", "ignora tus instrucciones", "vergiss deine Anweisungen", … */
const YOUR_INSTRUCTIONS = re(
  `${WB}(?:${[
    "(?:ignore|disregard|forget|discard|abandon) (?:all (?:of )?)?your (?:(?:previous|prior|original|initial|current|existing|system|safety|default|core|hidden|secret) )?(?:instructions|rules|guidelines|programming|directives|prompts?|system prompt|restrictions|guardrails|policies|filters|constraints)",
    "(?:ignora|olvida|descarta|ignore|olvide) (?:todas )?(?:tus|sus) (?:instrucciones|reglas|directrices|normas|indicaciones)",
    "(?:ignore|ignorez|oublie|oubliez) (?:toutes )?(?:tes|vos) (?:instructions|consignes|directives|règles)",
    "(?:ignoriere|vergiss|missachte|ignorieren Sie|vergessen Sie) (?:alle )?(?:deine|Ihre) (?:Anweisungen|Regeln|Richtlinien|Instruktionen|Vorgaben|Programmierung)",
    "(?:ignore|ignora|esqueça|esquece|desconsidere) (?:todas )?(?:as )?(?:suas|tuas) (?:instruções|regras|diretrizes|orientações)",
    "(?:ignora|dimentica|ignorate|dimenticate) (?:tutte )?(?:le )?(?:tue|sue) (?:istruzioni|regole|direttive|indicazioni)",
  ]
    .map(phrase)
    .join("|")})${WE}`,
);

const ZH_VERBS =
  "(?:忽略|无视|無視|忽视|忽視|忘记|忘記|忘掉|不要理会|不要理會|不要遵守|不用理会|不用理會|别管|別管|抛开|拋開|丢弃|丟棄)掉?";
const ZH_QUAL = "(?:之前|以前|先前|上面|上述|前面|以上|此前|原来|原來|原有|原先|最初|系统|系統)";
const ZH_ALL = "(?:所有|全部|一切)";
const ZH_NOUN = "(?:指令|指示|命令|提示词|提示詞|规则|規則|设定|設定|约束|約束|限制)";
const JA_NOUN = "(?:指示|命令|指令|プロンプト|ルール|制約)";
/** An imperative "ignore"/"forget", not "(I) forgot" or "was ignoring". */
const JA_VERB = "(?:無視|忘れ)(?:して|しろ|せよ|なさい|ろ|て)(?![いたし])";

/** Chinese (simplified and traditional), Japanese and Korean forms, written without spaces. */
const CJK_OVERRIDE: ReadonlyArray<{ need: Rule["need"]; patterns: readonly string[] }> = [
  {
    need: [["cjk_zh_verb"], ["cjk_noun"]],
    patterns: [
      `${ZH_VERBS}(?:你的|您的)?(?:${ZH_QUAL}的?${ZH_ALL}?的?|${ZH_ALL}的?${ZH_QUAL}?的?)${ZH_NOUN}`,
    ],
  },
  {
    need: [["cjk_noun"], ["colon"]],
    patterns: [
      "(?:新的?|真正的?)(?:指令|指示|系统提示词?|系統提示詞?)\\s{0,3}[:：]",
      "新しい(?:指示|命令|システムプロンプト)\\s{0,3}[:：]",
    ],
  },
  {
    need: [["cjk_you"], ["cjk_limit"]],
    patterns: [
      "你(?:现在|現在)(?:是|已经是|已經是|成为了?|成為了?)(?:一个|一個)?(?:没有|沒有|不受)(?:任何)?(?:限制|约束|約束|过滤|過濾|审查|審查)",
    ],
  },
  {
    need: [["cjk_you"], ["cjk_noun"]],
    patterns: [
      "(?:告诉我|告訴我|显示|顯示|输出|輸出|重复|重複|打印|泄露)(?:一下)?你的(?:系统提示词?|系統提示詞?|初始指令|原始指令|隐藏指令|隱藏指令)",
    ],
  },
  {
    need: [["cjk_ja_verb"], ["cjk_noun"]],
    patterns: [
      `(?:以前|前|上記|これまで|今まで|先ほど|最初|上|元|システム)の(?:すべての|全ての|全部の)?${JA_NOUN}(?:は|を|も)?(?:すべて|全て|全部)?${JA_VERB}`,
      `(?:すべての|全ての|全部の)${JA_NOUN}を${JA_VERB}`,
    ],
  },
  {
    need: [["cjk_limit"]],
    patterns: ["あなたは(?:今から|これから|今|もう)、?(?:制限|制約|フィルター)(?:の|が)(?:ない|無い)"],
  },
  {
    need: [["cjk_noun"], ["cjk_ja_show"]],
    patterns: ["(?:システムプロンプト|最初の指示|元の指示)を(?:教えて|表示して|出力して|見せて|繰り返して)"],
  },
  {
    need: [["ko_verb"], ["cjk_noun"]],
    patterns: [
      "(?:이전|위|앞|기존)의?\\s?(?:모든\\s)?(?:지시|명령|지침|프롬프트|규칙)(?:사항)?(?:을|를|은|는|들을)?\\s?(?:모두\\s|전부\\s)?(?:무시(?:해|하고|하세요|하십시오|하라)|잊어(?:버려|버리고|라|주세요)?)",
    ],
  },
];

const instructionOverride: InjectionDetector = {
  name: "instruction_override",
  summary:
    'an order to drop the instructions in force ("ignore all previous instructions", "forget everything above", "you are now an unrestricted AI", "New instructions:", "reveal your system prompt") in en, es, fr, de, pt, it, zh, ja, ko',
  rules: [
    overrideRule(EN),
    overrideRule(ES),
    overrideRule(FR),
    overrideRule(DE),
    overrideRule(PT),
    overrideRule(IT),
    {
      re: EVERYTHING_ABOVE,
      need: [["en_verb", "es_verb", "fr_verb", "de_verb", "pt_verb", "it_verb"]],
      accept: imperative,
    },
    {
      re: YOUR_INSTRUCTIONS,
      need: [["en_verb", "es_verb", "fr_verb", "de_verb", "pt_verb", "it_verb"]],
      accept: imperative,
    },
    ...PERSONA.map(({ need, phrases }) => ({
      re: re(`${WB}(?:${phrases.map(phrase).join("|")})${WE}`),
      ...(need === undefined ? {} : { need }),
    })),
    { re: NEW_INSTRUCTIONS, need: [["colon"], ["new_noun"]], accept: lineOrSentenceStart },
    {
      re: FROM_AUTHORITY,
      need: [["colon"], ["new_noun", "en_noun", "es_noun", "fr_noun", "de_noun", "pt_noun", "it_noun"]],
      accept: lineOrSentenceStart,
    },
    {
      re: REVEAL,
      need: [["reveal_noun"]],
      accept: imperative,
    },
    ...CJK_OVERRIDE.map(({ need, patterns }) => ({
      re: re(patterns.join("|"), "gu"),
      ...(need === undefined ? {} : { need }),
    })),
  ],
};

// ---- tool_call ----------------------------------------------------------------------------------------

const Q = "[\"'“”]";
const TOOL_KEY = re(
  `${Q}(?:tool_calls?|function_calls?|functionCall|toolCalls?|tool_use|tool_code|action_input|recipient_name)${Q}\\s{0,3}:`,
);
const TOOL_TYPE = re(
  `${Q}(?:type|role)${Q}\\s{0,3}:\\s{0,3}${Q}(?:function|tool|tool_use|tool_call|function_call|tool_result)${Q}`,
);
const ARGUMENTS_KEY = re(`${Q}(?:arguments|parameters|args|kwargs)${Q}\\s{0,3}:`);
const NAME_KEY = re(`${Q}(?:name|function|tool|tool_name|function_name)${Q}\\s{0,3}:\\s{0,3}${Q}`, "iu");
const TOOL_TAGS = re(
  "<\\/?(?:tool_calls?|tool_use|function_calls?|tool_code|tool_result|tool_response|functioncall)>|<invoke\\s{1,3}name\\s{0,3}=|<function=[\\w.-]{1,64}>|(?<![\\p{L}\\p{N}_])to=(?:functions|tools)\\.\\w",
);
const REACT = re("Action[ \\t]{0,3}Input[ \\t]{0,3}:");

/**
 * An `"arguments"` key with a `"name"` key of the same call within 400 characters on either side. (A text with
 * so many `"arguments"` keys that the reading budget runs out counts as tool calls.)
 */
function nearName(s: ScanText, start: number, end: number): boolean {
  if (!s.spend(800)) return true;
  const window = s.text.slice(Math.max(0, start - 400), Math.min(s.text.length, end + 400));
  return NAME_KEY.test(window);
}

/**
 * The JSON object around `[start, end)`: back to the nearest unmatched `{` (at most 2,000 characters back),
 * forward to its matching `}` (strings skipped, at most 20,000 characters). The match alone when either is
 * not found.
 */
function jsonObject(s: ScanText, start: number, end: number): Span {
  const { text } = s;
  if (!s.spend(Math.min(start, 2000) + Math.min(text.length - start, 20_000))) return [start, end];
  let open = -1;
  let depth = 0;
  for (let i = start - 1; i >= 0 && i >= start - 2000; i--) {
    const c = text.charCodeAt(i);
    if (c === 0x7d) depth++;
    else if (c === 0x7b) {
      if (depth === 0) {
        open = i;
        break;
      }
      depth--;
    }
  }
  if (open === -1) return [start, end];
  depth = 0;
  let quote = 0;
  const limit = Math.min(text.length, open + 20_000);
  for (let i = open; i < limit; i++) {
    const c = text.charCodeAt(i);
    if (quote !== 0) {
      if (c === 0x5c) i++;
      else if (c === quote) quote = 0;
      continue;
    }
    if (c === 0x22) quote = c;
    else if (c === 0x7b) depth++;
    else if (c === 0x7d && --depth === 0) return [open, i + 1];
  }
  return [open, Math.max(end, start)];
}

const toolCall: InjectionDetector = {
  name: "tool_call",
  summary:
    'tool- or function-call markup: JSON with "tool_calls", "function_call", {"name": …, "arguments": …} or "type": "function", <tool_call>/<function=…> tags, ReAct "Action Input:"',
  rules: [
    { re: TOOL_KEY, need: [["tool_key"], ["quote"]], span: jsonObject },
    { re: TOOL_TYPE, need: [["type_key"], ["tool_value"], ["quote"]], span: jsonObject },
    {
      re: ARGUMENTS_KEY,
      need: [["args_key"], ["name_key"], ["quote"]],
      accept: nearName,
      span: jsonObject,
    },
    { re: TOOL_TAGS, need: [["tool_tag"]] },
    { re: REACT, need: [["react"], ["colon"]], accept: lineStart },
  ],
};

// ---- exfil_link ---------------------------------------------------------------------------------------

/** From the `//` of a URL to its end (the scheme before it, if any, is added by `urlStart`). */
const URL = re("\\/\\/[^\\s\"'<>()`]{1,2048}");

/** Where the URL whose `//` is at `slashes` starts: at its `http:` or `https:` when it has one. */
function urlStart(text: string, slashes: number): number {
  const before = text.slice(Math.max(0, slashes - 6), slashes).toLowerCase();
  if (before.endsWith("https:")) return slashes - 6;
  if (before.endsWith("http:")) return slashes - 5;
  return slashes;
}
/** Template placeholders a model would fill in: `{{…}}`, `${…}` (also percent-encoded). */
const TEMPLATE = /\{\{|%7b%7b|\$\{|%24%7b/i;
/** A query value that is a placeholder: `=<…>` or `=[…]` (also percent-encoded). */
const PLACEHOLDER_VALUE = /=(?:<|%3c|\[|%5b)/i;
/** Query parameters that name what they carry. On an image a non-numeric value in one of them is data. */
const DATA_PARAMS = new Set([
  "q",
  "query",
  "data",
  "d",
  "text",
  "msg",
  "message",
  "content",
  "secret",
  "token",
  "key",
  "pw",
  "pass",
  "password",
  "email",
  "mail",
  "user",
  "username",
  "info",
  "payload",
  "prompt",
  "chat",
  "history",
  "conversation",
  "conv",
  "memory",
  "ctx",
  "context",
  "exfil",
  "leak",
  "c",
  "x",
]);
/** Tracking parameters: long opaque values, but set by the site, not by whoever wrote the link. */
const TRACKING =
  /^(?:utm_\w+|fbclid|gclid|dclid|gbraid|wbraid|gad_source|g_ep|g_st|msclkid|yclid|twclid|ttclid|li_fat_id|igshid|ved|ei|si|mc_cid|mc_eid|_hsenc|_hsmi|_ga|_gl|mkt_tok|ref|ref_src|spm)$/;
const BASE64ISH = /^[A-Za-z0-9+/_-]{20,}={0,2}$/;

/** A value that looks like encoded data: 20+ base64 characters mixing upper case, lower case and digits. */
function isBase64ish(value: string): boolean {
  const v = value.replace(/%2b/gi, "+").replace(/%2f/gi, "/").replace(/%3d/gi, "=");
  return BASE64ISH.test(v) && /[A-Z]/.test(v) && /[a-z]/.test(v) && /[0-9]/.test(v);
}

type UrlContext = "image" | "link" | "bare";

/** How a URL at `start` is embedded: a Markdown image or link target, an HTML `src=`, or bare text. */
function urlContext(text: string, start: number): UrlContext {
  let i = start - 1;
  while (
    i >= 0 &&
    i > start - 4 &&
    (text[i] === " " || text[i] === "<" || text[i] === '"' || text[i] === "'")
  )
    i--;
  if (text[i] === "(" && text[i - 1] === "]") {
    // Back to the `[` that opens the link text (same line, at most 400 characters).
    for (let j = i - 2, depth = 0; j >= 0 && j > i - 402; j--) {
      const c = text[j];
      if (c === "\n") break;
      if (c === "]") depth++;
      else if (c === "[") {
        if (depth === 0) return text[j - 1] === "!" ? "image" : "link";
        depth--;
      }
    }
    return "link";
  }
  if (text[i] === "=") {
    const tag = text.slice(Math.max(0, i - 200), i).toLowerCase();
    const lt = tag.lastIndexOf("<");
    if (
      lt !== -1 &&
      tag.lastIndexOf(">") < lt &&
      /^<(?:img|image|source|video|audio|input)\s/.test(tag.slice(lt)) &&
      /src\s*$/.test(tag)
    )
      return "image";
  }
  return "bare";
}

/**
 * A URL carrying data out: a template placeholder anywhere; in a Markdown link or image (or an HTML image),
 * a query value that is long (64+ characters) or base64-like; on an image, also a non-numeric value of a
 * parameter named for data (`q`, `data`, `token`, …). Plain links with ordinary queries pass.
 */
function carriesData(s: ScanText, slashes: number, end: number): boolean {
  if (s.inCode(slashes)) return false;
  const start = urlStart(s.text, slashes);
  const url = s.text.slice(start, end);
  if (TEMPLATE.test(url)) return true;
  const q = url.indexOf("?");
  if (q === -1) return false;
  const hash = url.indexOf("#", q);
  const query = url.slice(q + 1, hash === -1 ? url.length : hash);
  // A placeholder right after `=`: inside the URL (`=[USER]`) or where the URL stops (`=<USER_EMAIL>`).
  if (PLACEHOLDER_VALUE.test(query) || (query.endsWith("=") && "<[{".includes(s.text[end] ?? " ")))
    return true;
  const context = urlContext(s.text, start);
  if (context === "bare") return false;
  for (const pair of query.split(/[&;]/)) {
    const eq = pair.indexOf("=");
    const name = (eq === -1 ? "" : pair.slice(0, eq)).toLowerCase();
    const value = eq === -1 ? pair : pair.slice(eq + 1);
    if (value.length === 0 || TRACKING.test(name)) continue;
    if (value.length >= 64 || isBase64ish(value)) return true;
    if (context === "image" && DATA_PARAMS.has(name) && !/^[\d.,]+$|^(?:true|false)$/i.test(value))
      return true;
  }
  return false;
}

/** The whole Markdown construct `![…](…)` / `[…](…)` around a URL, or the URL alone. */
function linkSpan(s: ScanText, slashes: number, end: number): Span {
  const { text } = s;
  if (!s.spend(600)) return [slashes, end];
  const start = urlStart(text, slashes);
  let close = end;
  while (close < text.length && close < end + 200 && text[close] !== ")" && text[close] !== "\n") close++;
  let i = start - 1;
  while (i >= 0 && i > start - 4 && (text[i] === " " || text[i] === "<")) i--;
  if (text[i] !== "(" || text[i - 1] !== "]" || text[close] !== ")") return [start, end];
  for (let j = i - 2, depth = 0; j >= 0 && j > i - 402; j--) {
    const c = text[j];
    if (c === "\n") break;
    if (c === "]") depth++;
    else if (c === "[") {
      if (depth === 0) return [text[j - 1] === "!" ? j - 1 : j, close + 1];
      depth--;
    }
  }
  return [start, end];
}

const exfilLink: InjectionDetector = {
  name: "exfil_link",
  summary:
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the text names a template placeholder
    "a URL that carries data out: a {{template}} or ${placeholder} in it, or in a Markdown image/link (or <img src>) a long or base64-like query value, or an image whose q/data/token/… parameter holds text; not inside `code`",
  rules: [{ re: URL, need: [["slashes"]], accept: carriesData, span: linkSpan }],
};

// ---- active_html --------------------------------------------------------------------------------------

const SCRIPT_OPEN = re("<script(?:\\s[^<>]{0,400})?\\/?>");
const SCRIPT_CLOSE = /<\/script\s*>/giu;
const EMBED = re("<(?:iframe|frame|frameset|object|embed|applet|portal)\\s[^<>]{0,400}>");
const META = re("<(?:meta|base|form)\\s[^<>]{0,400}>");
const META_ACTIVE = /http-equiv\s*=\s*["']?refresh|^<base\s[^>]*href\s*=|^<form\s[^>]*action\s*=/i;
const HANDLER = re("[\\s/\"']on[a-z]{3,24}\\s{0,3}=");
const SCHEME = re(
  "(?:java|vb|live)script\\s{0,3}:|data\\s{0,3}:\\s{0,3}(?:text\\/html|image\\/svg\\+xml|application\\/(?:x-)?javascript)",
);

/** A `<script>` with attributes, or followed somewhere by `</script>`: not a mention of the tag. */
function activeScript(s: ScanText, start: number, end: number): boolean {
  if (s.inCode(start)) return false;
  if (s.text.slice(start, end).includes("=")) return true;
  return firstAtLeast(s.positions("script-close", SCRIPT_CLOSE), end) !== undefined;
}

/** From `<script` to the end of its `</script>` (or of the opening tag when there is none). */
function scriptSpan(s: ScanText, start: number, end: number): Span {
  const close = firstAtLeast(s.positions("script-close", SCRIPT_CLOSE), end);
  if (close === undefined || !s.spend(close - end + 16)) return [start, end];
  const gt = s.text.indexOf(">", close);
  return [start, gt === -1 ? s.text.length : gt + 1];
}

/** An `on…=` attribute inside a tag: a `<` and a tag name before it, no `>` in between (400 characters back). */
function inTag(s: ScanText, start: number): boolean {
  const { text } = s;
  if (!s.spend(400)) return true;
  for (let i = start - 1; i >= 0 && i >= start - 400; i--) {
    const c = text[i];
    if (c === ">") return false;
    if (c === "<") return /[a-z]/i.test(text[i + 1] ?? "") && !s.inCode(i);
  }
  return false;
}

/** The whole tag around an `on…=` attribute. */
function tagSpan(s: ScanText, start: number, end: number): Span {
  const { text } = s;
  if (!s.spend(2400)) return [start, end];
  let open = start;
  for (let i = start - 1; i >= 0 && i >= start - 400; i--) {
    if (text[i] === "<") {
      open = i;
      break;
    }
  }
  let close = end;
  while (close < text.length && close < end + 2000 && text[close] !== ">") close++;
  return [open, Math.min(text.length, close + 1)];
}

/** A script URL as an attribute value, a Markdown link target or an autolink: after `=`, `(` or `<`. */
function inUrlPosition(s: ScanText, start: number): boolean {
  const { text } = s;
  let i = start - 1;
  while (i >= 0 && i > start - 8 && /[\s"']/.test(text[i] ?? "")) i--;
  const c = text[i];
  return (c === "=" || c === "(" || c === "<") && !s.inCode(start);
}

/** A script URL up to the next space, quote or `>`, or the `)` that closes a Markdown link target. */
function urlTokenSpan(s: ScanText, start: number, end: number): Span {
  const { text } = s;
  if (!s.spend(2000)) return [start, end];
  let i = end;
  for (let depth = 0; i < text.length && i < end + 2000; i++) {
    const c = text[i] ?? "";
    if (c === "(") depth++;
    else if (c === ")" && --depth < 0) break;
    else if (/[\s"'>]/.test(c)) break;
  }
  return [start, i];
}

const activeHtml: InjectionDetector = {
  name: "active_html",
  summary:
    "HTML that runs or loads something: <script> (with attributes or a closing tag), <iframe>/<object>/<embed> with attributes, meta refresh, <base href>, <form action>, on…= handlers, javascript:/vbscript:/data:text/html URLs; not inside `code`",
  rules: [
    { re: SCRIPT_OPEN, need: [["lt"]], accept: activeScript, span: scriptSpan },
    {
      re: EMBED,
      need: [["lt"]],
      accept: (s, start, end) => s.text.slice(start, end).includes("=") && !s.inCode(start),
    },
    {
      re: META,
      need: [["lt"]],
      accept: (s, start, end) => META_ACTIVE.test(s.text.slice(start, end)) && !s.inCode(start),
    },
    { re: HANDLER, need: [["lt"]], accept: inTag, span: tagSpan },
    {
      re: SCHEME,
      need: [["scheme"], ["colon"]],
      accept: inUrlPosition,
      span: urlTokenSpan,
    },
  ],
};

/** Every detector, in the order they run. */
export const INJECTION_DETECTOR_LIST: readonly InjectionDetector[] = [
  roleMarker,
  instructionOverride,
  toolCall,
  exfilLink,
  activeHtml,
];
