/**
 * Types of @orama/stopwords and @orama/stemmers' language entry points ("@orama/stopwords/french"), which they
 * declare only in their package.json `exports`: `moduleResolution: node` does not read those.
 */
declare module "@orama/stopwords/*" {
  export const stopwords: string[];
}
declare module "@orama/stemmers/*" {
  export function stemmer(word: string): string;
  export const language: string;
}
