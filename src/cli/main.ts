/**
 * The `memgate` command line. Each command's code is imported when the command runs, not before: `memgate --help`
 * (and `serve --help`) load commander and nothing of the gateway.
 */
import { Command, CommanderError } from "commander";
import { envHelpText } from "../config/env-help";
import { MEMGATE_VERSION } from "../version";
import type { EvalOptions, Progress } from "./eval";
import type { EvalInjectionOptions } from "./eval-injection";
import type { EvalRedactionOptions } from "./eval-redaction";
import { type CliIo, EXIT_FAILURE, EXIT_INVALID, processIo } from "./io";

const collect = (value: string, previous: string[] = []) => [...previous, value];

/** A progress bar on stderr, redrawn in place; only when stderr is a terminal. */
function terminalProgress(): Progress | undefined {
  const { stderr } = process;
  if (!stderr.isTTY) return undefined;
  let last = "";
  return (phase, done, total) => {
    const width = 30;
    const filled = total === 0 ? width : Math.round((done / total) * width);
    const line = `${phase} [${"#".repeat(filled)}${".".repeat(width - filled)}] ${done}/${total}`;
    if (line === last) return;
    last = line;
    stderr.write(`\r${line}${done === total ? "\n" : ""}`);
  };
}

/** Runs the `memgate` CLI and resolves to its exit code. */
export async function main(argv: string[], io: CliIo = processIo): Promise<number> {
  let code = 0;
  const program = new Command("memgate")
    .description("memgate: a retrieval-policy gateway in front of long-term memory services")
    .version(MEMGATE_VERSION, "-V, --version", "print memgate's version")
    .showSuggestionAfterError(true)
    .exitOverride()
    .configureOutput({ writeOut: (s) => io.out(s.trimEnd()), writeErr: (s) => io.err(s.trimEnd()) });

  program
    .command("serve")
    .description("run the gateway (configuration from the environment variables below)")
    .addHelpText("after", envHelpText())
    .action(async () => {
      const { serveCommand } = await import("../server/serve");
      code = await serveCommand();
    });

  const keys = program.command("keys").description("API keys for the tenants file");
  keys
    .command("hash")
    .description("print the SHA-256 of a key for config/tenants.yaml (reads stdin when no key is given)")
    .argument("[key]", "the API key (prefer stdin: it stays out of shell history)")
    .action(async (key: string | undefined) => {
      const { keysHashCommand } = await import("./keys");
      code = await keysHashCommand(key, io);
    });
  keys
    .command("new")
    .description("generate a new random API key and print it with its hash")
    .action(async () => {
      const { keysNewCommand } = await import("./keys");
      code = await keysNewCommand(io);
    });

  const policy = program.command("policy").description("work with policy files");
  policy
    .command("validate")
    .description("validate policy files; exit 0, or 2 with one line per problem")
    .argument("<paths...>", "policy files (YAML or JSON), or directories: every policy file in each")
    .option("--json", "print one JSON report ({ok, files: [{file, ok, policy | problems}]}) on stdout", false)
    .action(async (paths: string[], opts: { json: boolean }) => {
      const { validateCommand } = await import("./policy");
      code = await validateCommand(paths, io, opts);
    });
  policy
    .command("diff")
    .description(
      "the effective difference of two policy files (compiled, defaults filled in): one `path: old → new` line each; exit 0 same, 1 different, 2 invalid",
    )
    .argument("<a>", "the old policy file")
    .argument("<b>", "the new policy file")
    .option("--json", "print one JSON report ({same, a, b, changes: [{path, old, new}]}) on stdout", false)
    .action(async (a: string, b: string, opts: { json: boolean }) => {
      const { diffCommand } = await import("./policy");
      code = await diffCommand(a, b, io, opts);
    });
  policy
    .command("schema")
    .description("print the JSON Schema of a policy file (for editors)")
    .action(async () => {
      const { schemaCommand } = await import("./policy");
      code = schemaCommand(io);
    });

  const tenants = program.command("tenants").description("work with the tenants file");
  tenants
    .command("validate")
    .description(
      "check a tenants file as the server's boot does (structure, rules, the environment variables it names); exit 0, or 2 with one line per problem",
    )
    .argument("<file>", "the tenants file (YAML)")
    .option(
      "--policy-dir <dir>",
      "also check that every tenant's default and allowed policies are in this directory",
    )
    .option("--json", "print one JSON report ({ok, file, tenants, problems}) on stdout", false)
    .action(async (file: string, opts: { policyDir?: string; json: boolean }) => {
      const { tenantsValidateCommand } = await import("./tenants");
      code = await tenantsValidateCommand(file, io, opts);
    });

  program
    .command("replay")
    .description("run the policy pipeline offline on recorded candidates and print the payload JSON")
    .requiredOption("--policy <file>", "policy file")
    .requiredOption("--input <file>", 'JSON file: {"query", "userId", "results": [Candidate…]}')
    .option("--explain", "include the per-stage trace", false)
    .action(async (opts: { policy: string; input: string; explain: boolean }) => {
      const { replayCommand } = await import("./replay");
      code = await replayCommand(opts, io);
    });

  program
    .command("eval")
    .description(
      "measure what policies keep of a golden set's evidence and answers, on identical candidates (see README)",
    )
    .requiredOption(
      "--golden <file|dir>",
      "golden set (JSONL: id, userId, query, expectedIds and/or answers, category), or a directory: every *.questions.jsonl in it",
    )
    .requiredOption("--policy <file|dir>", "a policy file, or a directory of them (repeatable)", collect)
    .option("--candidates <file>", "recorded candidates (from --record) instead of a live backend")
    .option("--backend <name>", "fetch candidates from local | zep | openmemory (default: MEMGATE_BACKEND)")
    .option(
      "--data <file|dir>",
      "with --backend local: the JSONL memories, or a directory: every *.memories.jsonl in it, one store (default: MEMGATE_LOCAL_DATA)",
    )
    .option("--record <file>", "save the fetched candidates, to compare later policies on the same ones")
    .option("--limit <n>", "candidates fetched per question (default: the largest topK × overfetch)")
    .option("--search-type <type>", "hybrid | semantic | keyword (default: the first policy's)")
    .option("--concurrency <n>", "questions fetched at once (default 4)")
    .option("--timeout-ms <n>", "timeout of one backend call (default 10000)")
    .option("--json", "print the report as JSON", false)
    .option(
      "--diff [a,b]",
      "what two policies keep, side by side, where they differ (default: the first two)",
    )
    .option("--diff-limit <n>", "questions shown in the diff (default 10)")
    .option("--min-answer-kept <share>", "exit 1 if a policy keeps the answer less often (0–1 or %)")
    .option("--min-evidence-recall <share>", "exit 1 if a policy's evidence recall is lower (0–1 or %)")
    .option("--max-mean-tokens <n>", "exit 1 if a policy's mean tokens are higher")
    .option(
      "--budgets <list>",
      "quality against tokens: every policy again at each retrieval.maxTokens, e.g. 300,450,800,1500",
    )
    .option("--chart <file.svg>", "with --budgets: write the sweep as an SVG chart")
    .action(async (opts: EvalOptions) => {
      const { evalCommand } = await import("./eval");
      code = await evalCommand(opts, io, io === processIo ? terminalProgress() : undefined);
    });

  program
    .command("eval-redaction")
    .description(
      "run the labelled redaction corpus through every built-in detector: recall and false positives per detector",
    )
    .option("--corpus <dir>", "directory of labelled .jsonl cases", "eval/redaction")
    .option("--min-recall <share>", "exit 1 if a detector's recall (or the overall one) is lower (0–1 or %)")
    .option("--max-fp <n>", "exit 1 if there are more false positives in all")
    .option("--json", "print the report as JSON", false)
    .action(async (opts: EvalRedactionOptions) => {
      const { evalRedactionCommand } = await import("./eval-redaction");
      code = await evalRedactionCommand(opts, io);
    });

  program
    .command("eval-injection")
    .description(
      "run the labelled injection cases and the golden set's memories through every injection detector: recall and false positives per detector",
    )
    .option("--cases <file>", "labelled cases (JSONL: id, lang, expect, text)", "eval/injection/cases.jsonl")
    .option(
      "--memories <file>",
      'ordinary chat that must not be flagged ("" to skip)',
      "eval/golden/basic/memories.jsonl",
    )
    .option("--min-recall <share>", "exit 1 if a detector's recall is lower (0–1 or %)")
    .option("--max-fp <n>", "exit 1 if there are more false positives in all (cases and memories)")
    .option("--json", "print the report as JSON", false)
    .action(async (opts: EvalInjectionOptions) => {
      const { evalInjectionCommand } = await import("./eval-injection");
      code = await evalInjectionCommand(opts, io);
    });

  program
    .command("mcp")
    .description(
      "an MCP server on stdin/stdout forwarding to a gateway's /mcp (desktop clients); the key from MEMGATE_API_KEY",
    )
    .requiredOption("--stdio <gatewayUrl>", "the gateway, e.g. http://127.0.0.1:8787")
    .action(async (opts: { stdio: string }) => {
      const { stdioProxyCommand } = await import("../mcp/stdio");
      code = await stdioProxyCommand(opts.stdio, io.err);
    });

  try {
    await program.parseAsync(argv, { from: "user" });
  } catch (err) {
    if (err instanceof CommanderError) {
      // --help and --version exit 0; usage errors are invalid input.
      return err.exitCode === 0 ? 0 : EXIT_INVALID;
    }
    io.err(`memgate: ${err instanceof Error ? err.message : String(err)}`);
    return EXIT_FAILURE;
  }
  return code;
}
