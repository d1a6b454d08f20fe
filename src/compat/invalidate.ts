/**
 * Which cached answers a write or delete through a door ends (issue 26 finding 7; docs/adopting.md#policy-errors-and-headers).
 * The retrieval cache is keyed by the owner a door searches for (./owners.ts): Zep's `user_id`, a graph, a
 * thread's context, OpenMemory's `user_id`. A write whose owner the path names ends that owner's entries
 * once the upstream (or the local store) has accepted it, before the caller sees the answer; a write whose owner
 * only its body or the upstream knows (Zep `graph.add`, an episode deleted by uuid, OpenMemory `POST /memory/add`
 * upstream) ends nothing: its answers live out the policy's `cache.ttlSeconds` + `staleSeconds`.
 */
import type { Request } from "express";
import type { CompatDeps } from "./deps";
import { graphOwner, threadOwner } from "./owners";

const READS: ReadonlySet<string> = new Set(["GET", "HEAD", "OPTIONS"]);

/** Path segments after `mount`, decoded; undefined when the path is not under it or does not decode. */
function segmentsUnder(mount: string, pathname: string): string[] | undefined {
  if (pathname !== mount && !pathname.startsWith(`${mount}/`)) return undefined;
  try {
    return pathname
      .slice(mount.length)
      .split("/")
      .filter((s) => s !== "")
      .map((s) => decodeURIComponent(s));
  } catch {
    return undefined;
  }
}

/** The cache users a proxied request writes to (none for a read, or when its path names no owner). */
export function ownersWritten(wire: "zep" | "openmemory", method: string, originalUrl: string): string[] {
  if (READS.has(method.toUpperCase())) return [];
  const pathname = originalUrl.split("?")[0] ?? "";
  const parts = segmentsUnder(wire === "zep" ? "/api/v2" : "", pathname);
  const [collection, id] = parts ?? [];
  if (id === undefined || id === "") return [];
  if (collection === "users") return [id];
  if (wire === "zep" && collection === "threads") return [threadOwner(id)];
  // `/graph/{graphId}` (a word such as `episodes` or `create` names no graph: ending its owner ends nothing).
  if (wire === "zep" && collection === "graph") return [graphOwner(id)];
  return [];
}

/**
 * What a proxied request's answer waits for: when the upstream accepted a write (2xx), the written owners' cached
 * answers end first. Undefined when the request writes no known owner.
 */
export function forgetOnSuccess(
  deps: CompatDeps,
  tenantId: string,
  req: Request,
  wire: "zep" | "openmemory",
): ((status: number) => Promise<void>) | undefined {
  const owners = ownersWritten(wire, req.method, req.originalUrl);
  if (owners.length === 0) return undefined;
  return (status) =>
    status >= 200 && status < 300 ? deps.retrieval.forgetUsers(tenantId, owners) : Promise.resolve();
}
