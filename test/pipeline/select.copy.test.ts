import { reserveCopy } from "../../src/pipeline/stages/select";
import type { WorkItem } from "../../src/pipeline/types";

/**
 * `reserveCopy` copies a work item field by field (cheaper than a spread for V8 here): it must be exactly
 * `{ ...item, reserve: true }`. `Required<WorkItem>` makes this file stop compiling when a field is added to
 * `WorkItem`, until it is set here, and the test then fails until `reserveCopy` copies it.
 */
describe("reserveCopy", () => {
  const every: Required<WorkItem> = {
    id: "m-1",
    content: "Ana: the trip to Lisbon is on May 3. Bring the passport.",
    score: 0.42,
    timestamp: "2026-02-01T10:00:00Z",
    sessionId: "s-1",
    messageId: "msg-1",
    type: "fact",
    role: "user",
    backend: "zep",
    sourceId: "edge-9",
    replyTo: "m-0",
    origin: "reply",
    backendScore: 7.5,
    validAt: "2026-01-01T00:00:00Z",
    invalidAt: "2026-06-01T00:00:00Z",
    timeMs: Date.parse("2026-02-01T10:00:00Z"),
    originalLength: 57,
    arrivedLength: 900,
    wasRedacted: true,
    reserve: false,
    flags: ["injection:role_play"],
  };

  test("equals the spread with reserve set, for an item with every field", () => {
    const copy = reserveCopy(every);
    expect(copy).toStrictEqual({ ...every, reserve: true });
    expect(copy).not.toBe(every);
    expect(every.reserve).toBe(false);
  });

  test("leaves out what the item does not have, as the spread does", () => {
    const bare: WorkItem = {
      id: "m-2",
      content: "Nothing else.",
      score: 0.1,
      timestamp: "2026-02-02T10:00:00Z",
      sessionId: "s-2",
      type: "message",
      timeMs: Date.parse("2026-02-02T10:00:00Z"),
      originalLength: 13,
      wasRedacted: false,
    };
    const copy = reserveCopy(bare);
    expect(copy).toStrictEqual({ ...bare, reserve: true });
    expect(Object.keys(copy).sort()).toEqual([...Object.keys(bare), "reserve"].sort());
  });
});
