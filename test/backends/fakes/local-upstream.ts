import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ContractUpstream, Fault, SeedMemory } from "../contract";

/**
 * The "upstream" of the local backend is its JSONL data file: `seed` writes the memories there and the
 * contract's `makeBackend` loads it (`createLocalBackend({ dataFile })`). An in-process store has no network to
 * fail, so `fail` is refused (the contract runs it with `faults: []`).
 */
export interface LocalUpstream extends ContractUpstream {
  /** Path of the JSONL file the seeded memories are written to. */
  readonly dataFile: string;
}

export async function createLocalUpstream(): Promise<LocalUpstream> {
  const dir = await mkdtemp(join(tmpdir(), "memgate-local-"));
  const dataFile = join(dir, "memories.jsonl");
  let lines: string[] = [];
  const flush = () =>
    writeFile(dataFile, `// seeded by the local contract upstream\n${lines.join("\n")}\n`, "utf8");
  await flush();

  return {
    dataFile,
    async seed(userId: string, memories: SeedMemory[]) {
      lines = lines.concat(memories.map((m) => JSON.stringify({ ...m, userId })));
      await flush();
    },
    fail(fault: Fault) {
      throw new Error(`the local backend has no upstream that could fail (${fault})`);
    },
    async reset() {
      lines = [];
      await flush();
    },
    async close() {
      await rm(dir, { recursive: true, force: true });
    },
  };
}
