/**
 * What the rollout suites (and the playground's shadow report in chromium) share: the `lean` shadow policy, the
 * test tenants (helpers/harness) with a rollout added to acme's policies, and Ana's memories.
 */
import { tenantsYaml } from "../helpers/harness";
import { makeCandidate } from "../helpers/items";

/** The shadow: at most two memories scoring 0.5 or more, no budget fill. */
export const LEAN =
  "name: lean\nversion: 1\ntokenizer: approx\nretrieval: { topK: 2, minScore: 0.5 }\nbudget: { fill: false }\n";

/** The test tenants with `rollout` (e.g. `canary: { policy: fast, percent: 30 }`) added to acme's policies. */
export const tenantsWithRollout = (rollout: string): string =>
  tenantsYaml().replace(
    'policies: { allowed: ["*"], default: default }',
    `policies: { allowed: ["*"], default: default, ${rollout} }`,
  );

/** `lean` shadowing every cache miss. */
export const SHADOWED = tenantsWithRollout("shadow: { policy: lean, sample: 1 }");

/** Five memories of Ana, best first (scores 0.92 down to 0.2); suites take the first n. */
export const ANA_MEMORIES = [
  makeCandidate({ id: "m1", content: "Ana orders an oat milk flat white every morning.", score: 0.92 }),
  makeCandidate({ id: "m2", content: "Ana is allergic to hazelnuts.", score: 0.71 }),
  makeCandidate({ id: "m3", content: "Ana moved to Lisbon in 2024.", score: 0.55 }),
  makeCandidate({ id: "m4", content: "Ana's sister is called Marta.", score: 0.3 }),
  makeCandidate({ id: "m5", content: "Ana prefers window seats on trains.", score: 0.2 }),
];
