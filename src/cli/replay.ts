import { readFile } from "node:fs/promises";
import { performance } from "node:perf_hooks";
import { formatPath, formatProblem } from "../config/yaml";
import { runPipeline } from "../pipeline";
import { replayInputSchema } from "../pipeline/candidate";
import { compilePolicyFile } from "../policy/compile";
import { buildPayload } from "../retrieval/payload";
import { type CliIo, EXIT_INVALID, EXIT_OK } from "./io";

export interface ReplayOptions {
  policy: string;
  input: string;
  explain?: boolean;
}

/**
 * `memgate replay --policy P --input F [--explain]`: runs stages 2–8 offline on recorded candidates and prints
 * `{memories, metadata, systemPrompt}` (plus `trace`). Exit 2 with a one-line reason on invalid policy or input.
 */
export async function replayCommand(opts: ReplayOptions, io: CliIo): Promise<number> {
  const loaded = await compilePolicyFile(opts.policy);
  if (!loaded.ok) {
    const first = loaded.problems[0];
    io.err(first ? formatProblem(first) : `${opts.policy}: invalid policy`);
    return EXIT_INVALID;
  }
  const { compiled } = loaded;

  let raw: unknown;
  try {
    raw = JSON.parse(await readFile(opts.input, "utf8"));
  } catch (err) {
    const reason = err instanceof SyntaxError ? `not valid JSON: ${err.message}` : "cannot read the file";
    io.err(`${opts.input}: ${reason}`);
    return EXIT_INVALID;
  }
  const input = replayInputSchema.safeParse(raw);
  if (!input.success) {
    const issue = input.error.issues[0];
    const path = issue ? formatPath(issue.path) : "";
    io.err(`${opts.input}: ${path ? `${path}: ` : ""}${issue?.message ?? "invalid input"}`);
    return EXIT_INVALID;
  }

  const started = performance.now();
  const result = runPipeline(
    {
      userId: input.data.userId,
      query: input.data.query,
      candidates: input.data.results,
      backend: "replay",
    },
    compiled,
  );
  const payload = buildPayload(result, compiled, {
    backend: "replay",
    cache: "bypass",
    queryTimeMs: performance.now() - started,
    explain: opts.explain === true,
  });
  io.out(JSON.stringify(payload, null, 2));
  return EXIT_OK;
}
