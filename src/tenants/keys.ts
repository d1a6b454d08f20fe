/**
 * API keys: how they are made, hashed and checked for shape. The tenants file stores only `hashKey(key)`;
 * the plaintext key exists in the client and, once, in the output of `memgate keys new` (src/cli/keys.ts).
 */
import { createHash, randomBytes } from "node:crypto";

/** Prefix of generated keys, so a leaked key is recognizable by secret scanners. */
export const KEY_PREFIX = "mg_";
/** Longest key accepted on the wire; longer values are rejected before hashing. */
export const MAX_KEY_LENGTH = 512;

/** The SHA-256 of the key (UTF-8), as 64 lowercase hex characters: what the tenants file stores. */
export function hashKey(key: string): string {
  return createHash("sha256").update(key, "utf8").digest("hex");
}

/** The non-secret key id used in logs and limits: the first 8 hex characters of the key's hash. */
export function keyIdOf(sha256: string): string {
  return sha256.slice(0, 8);
}

/** A new random key: `mg_` + 32 random bytes in base64url (256 bits of entropy). */
export function generateKey(): string {
  return `${KEY_PREFIX}${randomBytes(32).toString("base64url")}`;
}

/** A key the gateway can receive: 1–512 visible ASCII characters, no whitespace (RFC 7230 token-ish). */
export function isWellFormedKey(key: string): boolean {
  return key.length > 0 && key.length <= MAX_KEY_LENGTH && /^[\x21-\x7e]+$/.test(key);
}

/**
 * The example keys documented in config/tenants.example.yaml. Anyone can read them, so a tenants file that holds
 * one of their hashes is refused unless loaded with `allowExampleKeys` (the example itself, in tests and demos).
 */
export const EXAMPLE_KEYS = {
  acmeChat: "mg_example_acme_chat_REPLACE_ME",
  acmeOps: "mg_example_acme_ops_REPLACE_ME",
  globexApp: "mg_example_globex_app_REPLACE_ME",
} as const;
export const EXAMPLE_KEY_HASHES: ReadonlySet<string> = new Set(Object.values(EXAMPLE_KEYS).map(hashKey));
