/**
 * Function words per language (src/pipeline/text/stopwords.ts): a query drops those of the language it seems
 * to be in, for the local backend's search (queryTerms) and for relevant clipping (relevanceQuery), and
 * French, Spanish and German are stemmed with Snowball for clipping.
 */
import fc from "fast-check";
import { queryTerms } from "../../src/backends/local/query";
import { normalizeQuery } from "../../src/cache/key";
import { clipStage } from "../../src/pipeline/stages/clip";
import { queryTermsForRelevance, relevanceQuery, relevanceTerms } from "../../src/pipeline/text/relevance";
import { queryStopwords, STOP_LANGUAGES, STOPWORD_LISTS } from "../../src/pipeline/text/stopwords";
import { terms } from "../../src/pipeline/text/terms";
import { makeItem, makePolicy } from "../helpers/items";

const guess = (query: string) => queryStopwords(terms(query)).language;

describe("the query's language", () => {
  test("the list holding most of the query's words wins", () => {
    expect(guess("Quelle est la date du mariage de mon frère ?")).toBe("fr");
    expect(guess("¿Qué día entrena el club de corredores?")).toBe("es");
    expect(guess("Wann war der Einzug in die neue Wohnung?")).toBe("de");
    expect(guess("Quando è il matrimonio di mio fratello?")).toBe("it");
    expect(guess("Quando é o casamento do meu irmão?")).toBe("pt");
    expect(guess("Wanneer is de bruiloft van mijn broer?")).toBe("nl");
    expect(guess("when did my son die")).toBe("en");
  });

  test("a tie, or no function word at all, is English", () => {
    // "la" and "de" are French and Spanish alike.
    expect(guess("la casa de Pedro")).toBe("en");
    expect(guess("Lisbon hotel")).toBe("en");
    expect(guess("")).toBe("en");
  });

  test("every list is NFKC and lower case, so query terms can be looked up as they are", () => {
    for (const language of STOP_LANGUAGES) {
      for (const word of STOPWORD_LISTS[language]) {
        expect([language, word]).toEqual([language, word.normalize("NFKC").toLowerCase()]);
      }
    }
    // Content words Spanish's list holds are taken out: a question about a day or a time keeps them.
    expect(["día", "tiempo", "hora", "primer", "trabajo"].some((w) => STOPWORD_LISTS.es.has(w))).toBe(false);
  });
});

describe("the local backend's query terms", () => {
  test("French, Spanish and German queries lose their function words", () => {
    // Stemmed for the query's language and cut to six characters, as the index reads its memories.
    expect(queryTerms("Quelle est la date du mariage de mon frère ?")).toEqual(["dat", "mariag", "frer"]);
    expect(queryTerms("¿Qué día entrena el club de corredores?")).toEqual([
      "dia",
      "entren",
      "club",
      "corred",
    ]);
    expect(queryTerms("Wann war der Einzug in die neue Wohnung?")).toEqual(["einzug", "neu", "wohnun"]);
  });

  test("an English query keeps words that are function words elsewhere", () => {
    expect(queryTerms("When did my son die?")).toEqual(["son", "die"]);
    expect(queryTerms("What hat did I wear once?")).toEqual(["hat", "wear"]);
  });
});

describe("relevant clipping's query terms", () => {
  test("function words dropped, then French, Spanish and German stemmed with Snowball and cut", () => {
    expect(queryTermsForRelevance("la date du mariage")).toEqual(["dat", "mariag"]);
    expect(relevanceQuery("Quelle est la date du mariage de mon frère ?")).toEqual({
      terms: ["dat", "mariag", "frer"],
      language: "fr",
    });
    expect(queryTermsForRelevance("¿Cuántos perros adoptamos?")).toEqual(["perr", "adopt"]);
    expect(queryTermsForRelevance("Wann war der Einzug in die neuen Wohnungen?")).toEqual([
      "einzug",
      "neu",
      "wohnun",
    ]);
    expect(queryTermsForRelevance("When did my son die?")).toEqual(["son", "die"]);
  });

  test("memories are stemmed in the query's language: plurals and accents meet", () => {
    expect(relevanceTerms("frères Frère", "fr")).toEqual(["frer", "frer"]);
    expect(relevanceTerms("perros perro", "es")).toEqual(["perr", "perr"]);
    expect(relevanceTerms("Häuser Haus", "de")).toEqual(["haus", "haus"]);
    // English (and any other language) as before: Porter2 for ASCII words, then the cut.
    expect(relevanceTerms("frères weddings")).toEqual(["frères", "wed"]);
  });

  test("explain's matched terms hold no French function word", () => {
    const memory =
      "Le discours, c'est le plus stressant. Julien épouse Inès, ils sont ensemble depuis le lycée. " +
      "La date est fixée : le mariage de mon frère aura lieu le 21 juin. Ma mère m'a dit de faire court.";
    const policy = makePolicy({ retrieval: { clipSentences: 1 }, clip: { mode: "relevant" } });
    const stage = clipStage(
      [makeItem({ id: "m", content: memory })],
      policy,
      undefined,
      "Quelle est la date du mariage de mon frère ?",
    );
    expect(stage.items[0]?.content).toBe(
      "... La date est fixée : le mariage de mon frère aura lieu le 21 juin. ...",
    );
    const kept = stage.trace.changes[0]?.sentences?.kept ?? [];
    expect(kept.map((k) => k.terms)).toEqual([["dat", "mariag", "frer"]]);
    expect(stage.trace.detail).toEqual({ clipSentences: 1, mode: "relevant", queryTerms: 3 });
  });
});

describe("determinism", () => {
  const word = fc.constantFrom(
    "la",
    "de",
    "du",
    "die",
    "son",
    "once",
    "hat",
    "what",
    "wann",
    "qué",
    "mariage",
    "Frère",
    "frère",
    "Wohnung",
    "perros",
    "ＤＥ",
    "咖啡",
    "día",
  );
  const space = fc.constantFrom(" ", "  ", "\t", "\n", " \u00a0");
  const query = fc.array(fc.tuple(word, space), { maxLength: 10 }).map((ws) => ws.flat().join(""));
  // NFD spells "é" and "è" as a letter and a combining accent: the cache key's NFC folds them back.
  const decomposed = (q: string) => q.normalize("NFD");

  test("the same terms for every query the payload cache key takes as one (whitespace, NFC)", () => {
    fc.assert(
      fc.property(query, (q) => {
        for (const variant of [normalizeQuery(q), decomposed(q), ` ${q} `]) {
          expect(relevanceQuery(variant)).toEqual(relevanceQuery(q));
          expect(queryTerms(variant)).toEqual(queryTerms(q));
        }
        expect(relevanceQuery(q)).toEqual(relevanceQuery(q));
      }),
      { numRuns: 300 },
    );
  });
});
