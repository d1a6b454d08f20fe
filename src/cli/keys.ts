/** `memgate keys hash|new`: the commands that make a key and the hash the tenants file stores. */
import { generateKey, hashKey, isWellFormedKey, keyIdOf, MAX_KEY_LENGTH } from "../tenants/keys";
import { type CliIo, EXIT_INVALID, EXIT_OK } from "./io";

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
