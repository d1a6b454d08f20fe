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

/** Whether `text` asks a question, by the policy's `retrieval.questionAt` (unset: `end`). */
export function asksQuestion(text: string, at: QuestionAt | undefined): boolean {
  return (at === "anywhere" ? ASKS_ANYWHERE : ASKS_QUESTION).test(text);
}
