/**
 * A turn that asks a question: its text ends with a question mark (Latin, full-width, Arabic), closing quotes or
 * brackets aside. The turn after it in its session is its reply (policy `retrieval.replies`: the local store,
 * Zep episodes).
 */
export const ASKS_QUESTION = /[?？؟]["'”’)\]»\s]*$/u;
