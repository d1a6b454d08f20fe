/**
 * Whose cache entries and per-user limit a door's retrieval uses (issue 26 finding 8). A user's own searches use
 * the user id as it came (`/v1/retrieve`'s `userId`, Zep's `user_id`, OpenMemory's `user_id`): the same user
 * shares one bucket through every door. What is not a user — a Zep graph (`graph_id`), a thread's context, a
 * search naming neither — gets an owner in a namespace of its own, starting with a NUL character: `/v1` user ids
 * cannot hold one, and a door refuses a user id that starts with one, so `/v1` user `graph:X` never shares a
 * bucket or a cache entry with Zep graph X.
 */
const RESERVED = "\u0000";

export function graphOwner(graphId: string): string {
  return `${RESERVED}graph:${graphId}`;
}

export function threadOwner(threadId: string): string {
  return `${RESERVED}thread:${threadId}`;
}

/** A Zep search naming neither a user nor a graph (Zep refuses it; its fallback is still limited). */
export const NO_OWNER = `${RESERVED}none`;

/** Why a user id sent to a door cannot be used, or undefined when it can. */
export function reservedOwnerProblem(userId: string): string | undefined {
  return userId.startsWith(RESERVED) ? "must not start with a NUL character" : undefined;
}
