/**
 * The conversation the expansion-round tests share (retrieve, playground, `memgate eval`): the question names
 * Lisbon, which only t3 says, so a first search for the question finds the cooking turns and the round that
 * searches with the missing words ("Lisbon") finds t3.
 */
const TURNS = [
  [
    "t1",
    "2024-03-09T18:00:00Z",
    "Tom: I cooked a huge paella for the neighbours. Everyone wanted the recipe.",
  ],
  ["t2", "2024-03-10T18:00:00Z", "Tom: The neighbours loved it, I cooked it twice for them."],
  ["t3", "2024-04-02T09:00:00Z", "Maya: My cousin Inès lives in Lisbon now, near the river."],
  ["t4", "2024-06-15T18:00:00Z", "Tom: I cooked ramen from scratch this weekend. The broth took nine hours."],
] as const;

/** The turns as the local store's records (user `maya`, one session per day). */
export const EXPANSION_RECORDS = TURNS.map(([id, timestamp, content]) => ({
  id,
  userId: "maya",
  type: "message",
  sessionId: `s-${timestamp.slice(0, 10)}`,
  timestamp,
  content,
}));

/** The question whose first answer misses "Lisbon". */
export const EXPANSION_QUERY = "What did Tom cook for the neighbours in Lisbon?";
