/**
 * The tenants file's structure (docs/configuration.md#tenants-file) as a zod schema: strict objects (an unknown key is a typo, or an
 * inline secret). The loader (file.ts) checks the cross-field rules after it; directory.ts resolves a valid file.
 */
import { z } from "zod";
import { BACKEND_NAMES, POLICY_NAME } from "../policy/schema";
import { ANY_POLICY, SCOPES } from "./types";

function httpUrl(value: string): URL | undefined {
  try {
    const url = new URL(value);
    return url.protocol === "http:" || url.protocol === "https:" ? url : undefined;
  } catch {
    return undefined;
  }
}
/** An http(s) URL without inline credentials (those belong in an environment variable). */
export function urlProblem(value: string, mustEndWith?: string): string | undefined {
  const url = httpUrl(value);
  if (url === undefined) return "must be an http(s) URL";
  if (url.username !== "" || url.password !== "")
    return "must not contain credentials (name an env var instead)";
  if (mustEndWith !== undefined && !url.pathname.replace(/\/+$/, "").endsWith(mustEndWith)) {
    return `must end with ${mustEndWith}`;
  }
  return undefined;
}

const id = z
  .string()
  .regex(/^[a-z0-9][a-z0-9_-]{0,63}$/, "1–64 of a-z, 0-9, _ - (starting with a letter or digit)");
const keyName = z
  .string()
  .regex(
    /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/,
    "1–64 of A-Z, a-z, 0-9, _ . - (starting with a letter or digit)",
  );
const policyName = z.string().regex(POLICY_NAME, "a policy name (1–64 of a-z, 0-9, _ . -)");
const envName = z
  .string()
  .regex(
    /^[A-Za-z_][A-Za-z0-9_]{0,127}$/,
    "must be the NAME of an environment variable, e.g. ACME_ZEP_API_KEY",
  );

const url = (mustEndWith?: string) =>
  z.string().superRefine((v, ctx) => {
    const problem = urlProblem(v, mustEndWith);
    if (problem !== undefined) ctx.addIssue({ code: "custom", message: problem });
  });

const keySchema = z
  .object({
    /** For humans and logs. Unique within the tenant. */
    name: keyName,
    sha256: z
      .string()
      .regex(/^[0-9a-f]{64}$/, "must be 64 lowercase hex characters (`memgate keys hash` prints it)"),
    scopes: z.array(z.enum(SCOPES)).min(1, "at least one of retrieve, admin, proxy"),
    /** Requests this key may make per window (429 beyond); default MEMGATE_KEY_RATE_LIMIT. */
    rateLimit: z
      .object({
        points: z.number().int().min(1).max(1_000_000),
        durationSeconds: z.number().int().min(1).max(86_400),
      })
      .strict()
      .optional(),
  })
  .strict();

const backendsSchema = z
  .object({
    zep: z
      .object({ apiKeyEnv: envName, baseUrl: url("/api/v2").optional() })
      .strict()
      .optional(),
    openmemory: z
      .object({
        url: url().optional(),
        urlEnv: envName.optional(),
        apiKeyEnv: envName.optional(),
        userScoping: z.enum(["user_id", "api_key"]),
      })
      .strict()
      .optional(),
    local: z
      .object({ dataFile: z.string().min(1) })
      .strict()
      .optional(),
  })
  .strict();

/** A share from 0 to 1 (`sample`). */
const share = z
  .number({ error: "must be a number from 0 to 1" })
  .min(0, { error: "must be a number from 0 to 1" })
  .max(1, { error: "must be a number from 0 to 1" });

const shadowSchema = z
  .object({
    policy: policyName,
    /** Share of cache misses that also run the shadow policy (default 1: every miss). */
    sample: share.default(1),
  })
  .strict();

const canarySchema = z
  .object({
    policy: policyName,
    /** Share of users (0–100) served the canary policy; a user's share is stable (a keyed hash of tenant and user). */
    percent: z
      .number({ error: "must be a number from 0 to 100" })
      .min(0, { error: "must be a number from 0 to 100" })
      .max(100, { error: "must be a number from 0 to 100" }),
    /** Key of the user hash; a new salt re-draws which users are in the canary. Default: the tenant id. */
    salt: z
      .string()
      .regex(/^[A-Za-z0-9_.:-]{1,64}$/, "1–64 of A-Z, a-z, 0-9, _ . : -")
      .optional(),
  })
  .strict();

const tenantSchema = z
  .object({
    id,
    description: z.string().max(2000).optional(),
    keys: z.array(keySchema).min(1, "a tenant needs at least one key"),
    policies: z
      .object({
        allowed: z.array(z.union([z.literal(ANY_POLICY), policyName])).min(1),
        default: policyName,
        /** A policy run beside the served one on a sampled share of cache misses (docs/rollouts.md#shadow). */
        shadow: shadowSchema.optional(),
        /** A policy served to a stable share of users instead of the default (docs/rollouts.md#canary). */
        canary: canarySchema.optional(),
      })
      .strict()
      .default({ allowed: ["default"], default: "default" }),
    /** Optional when the tenant has exactly one backend. */
    defaultBackend: z.enum(BACKEND_NAMES).optional(),
    backends: backendsSchema,
  })
  .strict();

export const tenantsFileSchema = z
  .object({
    tenants: z.array(tenantSchema).min(1, "at least one tenant (without a file, memgate runs in dev mode)"),
  })
  .strict();
export type TenantsFile = z.output<typeof tenantsFileSchema>;
export type TenantEntry = TenantsFile["tenants"][number];
