import { sentenceEnds, sentenceSpans, splitSentences } from "../../src/pipeline/text/sentences";

type Case = [text: string, expected: string[]];

function table(cases: Case[]): void {
  test.each(cases)("%j", (text, expected) => {
    expect(splitSentences(text)).toEqual(expected);
  });
}

describe("splitSentences: basics", () => {
  table([
    ["", []],
    ["   \n\t ", []],
    ["no terminator here", ["no terminator here"]],
    ["One. Two! Three?", ["One.", "Two!", "Three?"]],
    ["First sentence. trailing text without end", ["First sentence.", "trailing text without end"]],
    ["  padded.   Spaces  inside   kept.  ", ["padded.", "Spaces  inside   kept."]],
    ["i went home. then i slept.", ["i went home.", "then i slept."]],
    ["Really?! Yes.", ["Really?!", "Yes."]],
    ["Wait...!  Go.", ["Wait...!", "Go."]],
    ["Is it?? no way", ["Is it??", "no way"]],
    ["Hi!!!", ["Hi!!!"]],
    // Lone surrogates (broken input) never throw and are kept.
    ["\ud83d. Next \ude00.", ["\ud83d.", "Next \ude00."]],
  ]);
});

describe("splitSentences: abbreviations", () => {
  table([
    ["Dr. Smith arrived. He sat down.", ["Dr. Smith arrived.", "He sat down."]],
    ["Mr. and Mrs. Kim met Ms. Lee and Prof. Ito.", ["Mr. and Mrs. Kim met Ms. Lee and Prof. Ito."]],
    ["Ask Sr. García or Jr. staff. Then go.", ["Ask Sr. García or Jr. staff.", "Then go."]],
    ["Martin Luther King Jr. Day is a holiday.", ["Martin Luther King Jr. Day is a holiday."]],
    ["She lives on St. Mark's Place. It is nice.", ["She lives on St. Mark's Place.", "It is nice."]],
    ["Real vs. Barça was fun. Next game soon.", ["Real vs. Barça was fun.", "Next game soon."]],
    ["Use fruit, e.g. Apples, i.e. Red ones. Done.", ["Use fruit, e.g. Apples, i.e. Red ones.", "Done."]],
    ["We meet at 3 p.m. today. Fine.", ["We meet at 3 p.m. today.", "Fine."]],
    ["We met at 9 a.m. Then we left.", ["We met at 9 a.m.", "Then we left."]],
    ["The U.S. Army left. He lives in the U.K. now.", ["The U.S. Army left.", "He lives in the U.K. now."]],
    ["I live in the U.S. He lives in the U.K.", ["I live in the U.S.", "He lives in the U.K."]],
    ["Ask for No. 5 please. No. I refuse.", ["Ask for No. 5 please.", "No.", "I refuse."]],
    [
      "Acme Inc. and Foo Ltd. merged with Bar Co. last year.",
      ["Acme Inc. and Foo Ltd. merged with Bar Co. last year."],
    ],
    ["I work at Acme Inc. It is great.", ["I work at Acme Inc.", "It is great."]],
    ["Due Jan. 5, paid Feb. 12 and Dec. 31.", ["Due Jan. 5, paid Feb. 12 and Dec. 31."]],
    ["J. R. R. Tolkien wrote it. Then he slept.", ["J. R. R. Tolkien wrote it.", "Then he slept."]],
    ["We chose plan B. Then it failed.", ["We chose plan B.", "Then it failed."]],
    ["See Fig. 3 and pp. 10-12 for details.", ["See Fig. 3 and pp. 10-12 for details."]],
    // Decision: "etc." before an uppercase word ends the sentence; before a lowercase word it does not.
    ["Buy eggs, milk, etc. The store closes soon.", ["Buy eggs, milk, etc.", "The store closes soon."]],
    ["Buy eggs, milk, etc. and bread.", ["Buy eggs, milk, etc. and bread."]],
    ["Bring pens, paper, etc.", ["Bring pens, paper, etc."]],
    ["It was approx. ten km.", ["It was approx. ten km."]],
  ]);
});

describe("splitSentences: numbers, URLs, e-mail", () => {
  table([
    ["Pi is 3.14. Next", ["Pi is 3.14.", "Next"]],
    ["Only 0.5 left. .5 more.", ["Only 0.5 left.", ".5 more."]],
    ["Node 20.19 ships v1.2.3. Upgrade now.", ["Node 20.19 ships v1.2.3.", "Upgrade now."]],
    ["Visit https://example.com/a.b?x=1. Next", ["Visit https://example.com/a.b?x=1.", "Next"]],
    [
      "See www.example.org/docs?page=2 for more. Thanks!",
      ["See www.example.org/docs?page=2 for more.", "Thanks!"],
    ],
    ["Mail ana.lopez@example.co.uk. Then wait.", ["Mail ana.lopez@example.co.uk.", "Then wait."]],
    ["It costs $5. 3 people paid.", ["It costs $5.", "3 people paid."]],
    ["1. Buy milk.\n2. Call mom.", ["1. Buy milk.", "2. Call mom."]],
  ]);
});

describe("splitSentences: ellipses (end a sentence only before an uppercase word other than 'I')", () => {
  table([
    ["Well... I think so.", ["Well... I think so."]],
    ["Well... I'm not sure.", ["Well... I'm not sure."]],
    ["Well... We think so.", ["Well...", "We think so."]],
    ["Well... so what.", ["Well... so what."]],
    ["Hmm… maybe later.", ["Hmm… maybe later."]],
    ["Hmm… Later then.", ["Hmm…", "Later then."]],
    ["It went on...and on.", ["It went on...and on."]],
    ["He paused . . . then spoke.", ["He paused . . . then spoke."]],
    ["He paused . . . Then spoke.", ["He paused . . .", "Then spoke."]],
  ]);
});

describe("splitSentences: quotes and brackets after the terminator", () => {
  table([
    ['He said "Stop." Then left.', ['He said "Stop."', "Then left."]],
    ["(See above.) Next one.", ["(See above.)", "Next one."]],
    ['"Stop!" he said. OK.', ['"Stop!" he said.', "OK."]],
    ["She asked, 'Why?' and left.", ["She asked, 'Why?' and left."]],
    ["He left. “Why?” she asked.", ["He left.", "“Why?” she asked."]],
    ["Done.) [Really?] Yes.", ["Done.)", "[Really?]", "Yes."]],
    ["«Ça va?» Oui.", ["«Ça va?»", "Oui."]],
    ["Great!😀 See you.", ["Great!😀", "See you."]],
  ]);
});

describe("splitSentences: newlines", () => {
  table([
    ["Title\n\nBody text here. More.", ["Title", "Body text here.", "More."]],
    ["line one\nline two", ["line one\nline two"]],
    ["para one\r\n\r\npara two", ["para one", "para two"]],
    ["para one\u2029para two", ["para one", "para two"]],
    ["Dr.\n\nSmith", ["Dr.", "Smith"]],
    ["End.\n\n\nNext.", ["End.", "Next."]],
  ]);
});

describe("splitSentences: scripts", () => {
  table([
    ["我喜欢咖啡。我每天早上喝一杯。", ["我喜欢咖啡。", "我每天早上喝一杯。"]],
    ["你好！你是谁？我是小明。", ["你好！", "你是谁？", "我是小明。"]],
    ["他说：“我来了。”然后走了。", ["他说：“我来了。”", "然后走了。"]],
    ["今日は晴れです！明日は雨？", ["今日は晴れです！", "明日は雨？"]],
    ["「よし！」と言った。次。", ["「よし！」と言った。", "次。"]],
    ["『終わり。』次の章。", ["『終わり。』", "次の章。"]],
    ["半角｡次", ["半角｡", "次"]],
    ["Hello!你好", ["Hello!", "你好"]],
    ["他来了.我走了", ["他来了.", "我走了"]],
    ["版本1.2发布了。", ["版本1.2发布了。"]],
    ["안녕하세요. 저는 학생입니다! 정말요? 네.", ["안녕하세요.", "저는 학생입니다!", "정말요?", "네."]],
    ["كيف حالك؟ أنا بخير.", ["كيف حالك؟", "أنا بخير."]],
    ["یہ کتاب ہے۔ وہ قلم ہے۔", ["یہ کتاب ہے۔", "وہ قلم ہے۔"]],
    ["שלום. מה שלומך?", ["שלום.", "מה שלומך?"]],
    ["मैं घर जा रहा हूँ। कल मिलेंगे।", ["मैं घर जा रहा हूँ।", "कल मिलेंगे।"]],
    ["Cafe\u0301 is open. E\u0301tienne came.", ["Cafe\u0301 is open.", "E\u0301tienne came."]],
    ["I love it 😀. Next 👩‍👩‍👧 came.", ["I love it 😀.", "Next 👩‍👩‍👧 came."]],
    ["¿Qué? ¡Nada! Bien.", ["¿Qué?", "¡Nada!", "Bien."]],
  ]);
});

describe("sentenceEnds / sentenceSpans", () => {
  test("ends exclude trailing whitespace and only whitespace lies between spans", () => {
    const text = "  One.  Two!\n\nThree  ";
    expect(sentenceEnds(text)).toEqual([6, 12, 19]);
    const spans = sentenceSpans(text);
    expect(spans).toEqual([
      { start: 2, end: 6 },
      { start: 8, end: 12 },
      { start: 14, end: 19 },
    ]);
  });

  test("a limit stops the scan after that many sentences", () => {
    const text = "One. Two. Three. Four.";
    expect(sentenceEnds(text, 2)).toEqual([4, 9]);
    expect(sentenceSpans(text, 1)).toEqual([{ start: 0, end: 4 }]);
    expect(sentenceEnds(text, 10)).toEqual(sentenceEnds(text));
  });

  test("no characters other than inter-sentence whitespace are lost", () => {
    const text = 'Dr. Who? "Yes!" 我喜欢咖啡。Ok...  fine. v1.2 at 3 p.m. Then\n\nEnd';
    const strip = (s: string) => s.replace(/\s+/g, "");
    expect(strip(splitSentences(text).join(""))).toBe(strip(text));
  });
});

/**
 * The two approaches the team measured, kept here to document why neither is used:
 * seed 000's regex, and Intl.Segmenter (Node's bundled ICU, fixed locale "en").
 */
const seedSplit = (t: string): string[] => (t.match(/[^.!?]+[.!?]+/g) ?? [t]).map((s) => s.trim());
const segmenter = new Intl.Segmenter("en", { granularity: "sentence" });
const intlSplit = (t: string): string[] =>
  Array.from(segmenter.segment(t), (s) => s.segment.trim()).filter((s) => s.length > 0);

describe("baselines fail where splitSentences does not", () => {
  const cases: Array<[string, string[], "seed" | "intl" | "both"]> = [
    ["Dr. Smith arrived. He sat down.", ["Dr. Smith arrived.", "He sat down."], "both"],
    ["Mr. Lee met Mrs. Kim. Fine.", ["Mr. Lee met Mrs. Kim.", "Fine."], "both"],
    ["We meet at 3 p.m. today. Fine.", ["We meet at 3 p.m. today.", "Fine."], "seed"],
    ["Pi is 3.14 exactly. Next.", ["Pi is 3.14 exactly.", "Next."], "seed"],
    ["Visit https://example.com/a.b?x=1. Next", ["Visit https://example.com/a.b?x=1.", "Next"], "both"],
    ["我喜欢咖啡。我每天早上喝一杯。", ["我喜欢咖啡。", "我每天早上喝一杯。"], "seed"],
    ["The U.S. Army left. It rained.", ["The U.S. Army left.", "It rained."], "both"],
  ];
  test.each(cases)("%j", (text, expected, failing) => {
    expect(splitSentences(text)).toEqual(expected);
    if (failing !== "intl") expect(seedSplit(text)).not.toEqual(expected);
    // Documents Node 20's ICU; if a future ICU learns these, this line tells us the baseline moved.
    if (failing !== "seed") expect(intlSplit(text)).not.toEqual(expected);
  });
});
