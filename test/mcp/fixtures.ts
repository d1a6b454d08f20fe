/** One user's conversation in the local store (and another user's turn), for the MCP tests. */
export const EMAIL = "ana.lopez@example.com";
const turn = (
  id: string,
  minute: number,
  content: string,
  role = "user",
  extra: Record<string, unknown> = {},
) => ({
  id,
  userId: "ana",
  content,
  type: "message",
  role,
  timestamp: `2026-03-01T09:${String(minute).padStart(2, "0")}:00Z`,
  sessionId: "s-1",
  ...extra,
});
export const RECORDS = [
  turn("t1", 0, "Good morning! I am planning a trip."),
  turn("t2", 1, "Sure, where would you like to go?", "assistant"),
  turn("t3", 2, `I want to visit Lisbon in May. Send the itinerary to ${EMAIL} please.`),
  turn("t4", 3, "Lisbon in May is lovely. I will send it.", "assistant"),
  turn("t5", 4, "Also book a table at a fado restaurant."),
  turn("other", 0, "Bob's secret trip to Lisbon is in June.", "user", { userId: "bob", sessionId: "s-b" }),
];
