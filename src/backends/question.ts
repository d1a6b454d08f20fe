/**
 * A turn that asks a question: its text ends with a question mark (Latin, full-width, Arabic), closing quotes or
 * brackets aside. The turn after it in its session is its reply (policy `retrieval.replies`: the local store,
 * Zep episodes).
 */
export const ASKS_QUESTION = /[?？؟]["'”’)\]»\s]*$/u;

/** A turn with a question mark anywhere: "I know! Remind me which van company you booked? I need to tell…". */
export const ASKS_ANYWHERE = /[?？؟]/u;

/** Where a turn's question mark must be for the turn to count as asking one (policy `retrieval.questionAt`). */
export type QuestionAt = "end" | "anywhere";

/** What may follow the question mark (`ASKS_QUESTION`'s tail): closing quotes and brackets, and `\s`. */
function closesOrSpaces(c: number): boolean {
  switch (c) {
    case 0x22: // "
    case 0x27: // '
    case 0x201d: // ”
    case 0x2019: // ’
    case 0x29: // )
    case 0x5d: // ]
    case 0xbb: // »
    // JavaScript's `\s`: ASCII whitespace, no-break and Unicode spaces, line and paragraph separators, BOM.
    case 0x09:
    case 0x0a:
    case 0x0b:
    case 0x0c:
    case 0x0d:
    case 0x20:
    case 0xa0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202f:
    case 0x205f:
    case 0x3000:
    case 0xfeff:
      return true;
    default:
      return c >= 0x2000 && c <= 0x200a;
  }
}

/**
 * `ASKS_QUESTION.test(text)`, read from the end: past the closing quotes, brackets and spaces, a question mark. The
 * regex tries every position of the text (a turn of ~500 characters, twice per Zep episode on a miss: ~14 µs per
 * miss); this reads the few last characters.
 */
export function endsWithQuestion(text: string): boolean {
  let i = text.length - 1;
  while (i >= 0 && closesOrSpaces(text.charCodeAt(i))) i--;
  if (i < 0) return false;
  const c = text.charCodeAt(i);
  return c === 0x3f || c === 0xff1f || c === 0x061f;
}

/** Whether `text` asks a question, by the policy's `retrieval.questionAt` (unset: `end`). */
export function asksQuestion(text: string, at: QuestionAt | undefined): boolean {
  return at === "anywhere" ? ASKS_ANYWHERE.test(text) : endsWithQuestion(text);
}
