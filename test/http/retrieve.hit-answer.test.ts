/** A cache hit's answer on /v1/retrieve with the in-process cache (test/helpers/hit-answer.ts). */
import { hitAnswerSuite } from "../helpers/hit-answer";

describe("POST /v1/retrieve — a cache hit's answer, in process", () => {
  hitAnswerSuite({ env: () => ({}) });
});
