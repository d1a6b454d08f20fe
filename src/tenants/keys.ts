/**
 * API keys: how they are made, hashed and checked for shape. The tenants file stores only `hashKey(key)`;
 * the plaintext key exists in the client and, once, in the output of `memgate keys new`.
 */
import { createHash, randomBytes } from "node:crypto";
import { type CliIo, EXIT_INVALID, EXIT_OK } from "../cli/io";

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

const KEY_SHAPE = `1–${MAX_KEY_LENGTH} visible ASCII characters without spaces`;

/**
 * `memgate keys hash [key]`: prints the SHA-256 to put in the tenants file. Without an argument the key is read
 * from stdin (`memgate keys hash < key.txt`, or pasted), so it does not land in the shell history.
 */
export async function keysHashCommand(
  key: string | undefined,
  io: CliIo,
  stdin: NodeJS.ReadableStream & { isTTY?: boolean } = process.stdin,
): Promise<number> {
  let value = key;
  if (value === undefined) {
    if (stdin.isTTY === true) io.err("Paste the API key, then press Enter:");
    value = await readKey(stdin);
  } else {
    io.err(
      "note: a key given as an argument can land in the shell history; `memgate keys hash < file` avoids it",
    );
  }
  if (!isWellFormedKey(value)) {
    io.err(`memgate keys hash: the key must be ${KEY_SHAPE}`);
    return EXIT_INVALID;
  }
  const sha256 = hashKey(value);
  io.out(sha256);
  io.err(`keyId ${keyIdOf(sha256)} (how this key appears in logs)`);
  return EXIT_OK;
}

/** `memgate keys new`: a fresh key and its hash. The key is shown once; only the hash goes in the tenants file. */
export function keysNewCommand(io: CliIo): number {
  const key = generateKey();
  const sha256 = hashKey(key);
  io.out(`key: ${key}`);
  io.out(`sha256: ${sha256}`);
  io.out(`keyId: ${keyIdOf(sha256)}`);
  io.err(
    "Give the key to the client now (it is not stored anywhere); put only the sha256 in the tenants file.",
  );
  return EXIT_OK;
}

/** The first line of the stream (a TTY) or all of it (a pipe or file), without surrounding whitespace. */
async function readKey(stdin: NodeJS.ReadableStream & { isTTY?: boolean }): Promise<string> {
  const chunks: string[] = [];
  stdin.setEncoding("utf8");
  for await (const chunk of stdin) {
    chunks.push(String(chunk));
    if (stdin.isTTY === true && chunks.join("").includes("\n")) break;
  }
  const text = chunks.join("");
  const firstLine = stdin.isTTY === true ? (text.split("\n")[0] ?? "") : text;
  return firstLine.trim();
}
