import { analyzeQuery, answerFit, queryEntities } from "../../src/pipeline/query/analyze";
import { findEventAnchor, resolveTimeScope } from "../../src/pipeline/query/time-scope";

const TURN = Date.parse("2024-06-19T15:00:00Z"); // a Wednesday
const day = (iso: string) => Date.parse(`${iso}T00:00:00Z`);

describe("query understanding", () => {
  test.each([
    ["When did Maya start pottery?", "time"],
    ["On what date did Daniel begin at Westmoor?", "time"],
    ["What is the date of Lena and Theo's wedding?", "time"],
    ["On which dates was the Lisbon conference held?", "time"],
    ["Quelle est la date de la crémaillère de Camille ?", "time"],
    ["¿Qué días estarán Mateo y Lucía en la casita asturiana?", "time"],
    ["Who gave Tom the bike?", "person"],
    ["Where does Maya take her classes?", "place"],
    ["How many students did I see during the flu?", "number"],
    ["Why did Lucas withdraw his transfer?", "reason"],
    ["What activities does Melanie do?", "list"],
    ["Is Tom more of a morning person?", "yesno"],
    ["What did Maya bake?", "thing"],
    ["Quand Karim a-t-il reçu ses résultats ?", "time"],
    ["Où a lieu le mariage de Julien ?", "place"],
    ["Combien ai-je payé la Yaris ?", "number"],
    ["¿Cuándo adoptó Sofía al gato?", "time"],
    ["¿En qué fecha le contó Mateo a Pablo la oferta?", "time"],
    ["¿Dónde vive Pablo ahora?", "place"],
    ["Wann hat Clara den Laden eröffnet?", "time"],
    ["Wie viele Bücher hat Jonas gekauft?", "number"],
  ])("%s → %s", (query, type) => {
    expect(analyzeQuery(query, TURN).answerType).toBe(type);
  });

  test("intents: procedural, exploratory, analytical, factual", () => {
    expect(analyzeQuery("How do I descale the espresso machine?", TURN).intent).toBe("procedural");
    expect(analyzeQuery("Tell me about my trip to Lisbon", TURN).intent).toBe("exploratory");
    expect(analyzeQuery("Why are my runs getting slower?", TURN).intent).toBe("analytical");
    expect(analyzeQuery("What did Maya buy?", TURN).intent).toBe("factual");
  });

  test("entities: names and quoted titles, not question words, elisions or German nouns after an article", () => {
    expect(queryEntities("What did Maya buy for Tom's sister?")).toEqual(["Maya", "Tom"]);
    expect(queryEntities("Qu'est-ce que Camille a acheté pour remplacer son scooter ?")).toEqual(["Camille"]);
    expect(queryEntities("Wie verlief die Genesung von Claras Mutter?")).not.toContain("Genesung");
    expect(queryEntities('Did I finish "The Left Hand of Darkness" in 2024?')).toEqual([
      "The Left Hand of Darkness",
      "2024",
    ]);
    expect(queryEntities("¿Lucirá Mateo bailando en la boda?")).toEqual(["Mateo"]);
  });

  test("complexity: a list question over two people is more complex than a simple fact", () => {
    const simple = analyzeQuery("What is Pickle?", TURN);
    const complex = analyzeQuery("Which cities did Tom and Maya both visit for work last year?", TURN);
    expect(complex.complexity).toBeGreaterThan(simple.complexity);
    expect(complex.multiHop).toBe(true);
    expect(simple.multiHop).toBe(false);
    expect(complex.complexity).toBeLessThanOrEqual(1);
  });

  test("current-state questions", () => {
    expect(analyzeQuery("Where does Daniel live now?", TURN).wantsCurrent).toBe(true);
    expect(analyzeQuery("Where did Daniel live in March?", TURN).wantsCurrent).toBe(false);
  });

  test("answer fit: a sentence holds the kind of answer asked for", () => {
    expect(answerFit("time", "We went last Saturday.")).toBe(1);
    expect(answerFit("time", "We went together.")).toBe(0);
    expect(answerFit("number", "I ran 18 km.")).toBe(1);
    expect(answerFit("person", "Maya: It was Joaquín who called.")).toBe(1);
    expect(answerFit("person", "Maya: it was raining.")).toBe(0);
    expect(answerFit("reason", "I stayed home because of the storm.")).toBe(1);
  });
});

describe("time scope, resolved against the turn's time only", () => {
  test.each([
    ["What did I cook yesterday?", "2024-06-18", "2024-06-19"],
    ["What did Tom say last week?", "2024-06-10", "2024-06-17"],
    ["What did Tom do last month?", "2024-05-01", "2024-06-01"],
    ["What happened last year?", "2023-01-01", "2024-01-01"],
    ["What was Maya worried about in April?", "2024-04-01", "2024-05-01"],
    ["What did we plan in September?", "2023-09-01", "2023-10-01"],
    ["What did I say on 2024-05-12?", "2024-05-12", "2024-05-13"],
    ["Qu'est-ce que Karim a fait le mois dernier ?", "2024-05-01", "2024-06-01"],
    ["¿Qué cenó Lucía ayer?", "2024-06-18", "2024-06-19"],
    ["Was hat Jonas letzte Woche gemacht?", "2024-06-10", "2024-06-17"],
    ["Qu'a dit Julie en mai ?", "2024-05-01", "2024-06-01"],
    // The evening before the turn: told that night or the morning after.
    ["Which restaurant did Ben go to last night?", "2024-06-18", "2024-06-20"],
    ["¿Qué tiró Pimienta del balcón anoche?", "2024-06-18", "2024-06-20"],
    // The latest such weekday before the turn's day (a Wednesday), and the day after it.
    ["How far did Omar run last Saturday?", "2024-06-15", "2024-06-17"],
    ["Qu'est-ce que Lucas a cuisiné dimanche dernier ?", "2024-06-16", "2024-06-18"],
    ["¿Qué marca hizo Sofía en la carrera del domingo pasado?", "2024-06-16", "2024-06-18"],
    ["Was hat Jonas letzten Mittwoch gemacht?", "2024-06-12", "2024-06-14"],
    // Part of a month.
    ["What was wrong with Maya's wrist in early September?", "2023-09-01", "2023-09-13"],
    ["How far was Tom running on Sundays in late February?", "2024-02-18", "2024-03-01"],
    ["What was Maya dealing with at the start of August?", "2023-08-01", "2023-08-13"],
    ["Quel problème Camille a-t-elle eu avec sa banque début avril ?", "2024-04-01", "2024-04-13"],
    ["¿Qué pasó a finales de mayo?", "2024-05-18", "2024-06-01"],
    ["Was hat Clara Mitte Mai gemacht?", "2024-05-08", "2024-05-24"],
  ])("%s", (query, start, end) => {
    const scope = resolveTimeScope(query, TURN);
    expect(scope).toBeDefined();
    expect(scope?.start).toBe(day(start));
    expect(scope?.end).toBe(day(end));
  });

  test.each([
    "What did Tom say two weeks ago?",
    "Qu'a dit Karim il y a deux semaines ?",
    "¿Qué dijo Lucía hace dos semanas?",
    "Was hat Jonas vor zwei Wochen gesagt?",
  ])("%s: a window around 14 days before the turn", (query) => {
    const scope = resolveTimeScope(query, TURN);
    const point = day("2024-06-05");
    expect(scope).toBeDefined();
    expect(scope?.start).toBeLessThanOrEqual(point);
    expect(scope?.end).toBeGreaterThan(point);
    expect((scope?.end ?? 0) - (scope?.start ?? 0)).toBeLessThanOrEqual(9 * 86_400_000);
  });

  test("no time phrase, no scope; no turn time, no scope (the host clock is never read)", () => {
    expect(resolveTimeScope("What does Maya bake?", TURN)).toBeUndefined();
    const now = jest.spyOn(Date, "now").mockReturnValue(Date.parse("2031-01-01T00:00:00Z"));
    try {
      expect(analyzeQuery("What did I cook yesterday?", undefined).timeScope).toBeUndefined();
      const a = analyzeQuery("What did I cook yesterday?", TURN).timeScope;
      now.mockReturnValue(Date.parse("1999-01-01T00:00:00Z"));
      expect(analyzeQuery("What did I cook yesterday?", TURN).timeScope).toEqual(a);
    } finally {
      now.mockRestore();
    }
  });

  test("event anchors: before/after a named event, not 'vor zwei Wochen'", () => {
    expect(findEventAnchor("What job did Maya have before the bakery?")).toEqual({
      relation: "before",
      words: ["bakery"],
      phrase: "before bakery",
    });
    expect(findEventAnchor("Qu'a fait Lucas après le mariage ?")?.relation).toBe("after");
    expect(findEventAnchor("Was hat Jonas vor zwei Wochen gesagt?")).toBeUndefined();
  });
});
