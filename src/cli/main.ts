import { Command, CommanderError } from "commander";
import { serveCommand } from "../server/serve";
import { keysHashCommand, keysNewCommand } from "../tenants/keys";
import { type CliIo, EXIT_FAILURE, EXIT_INVALID, processIo } from "./io";
import { schemaCommand, validateCommand } from "./policy";
import { replayCommand } from "./replay";

/** Runs the `memgate` CLI and resolves to its exit code. */
export async function main(argv: string[], io: CliIo = processIo): Promise<number> {
  let code = 0;
  const program = new Command("memgate")
    .description("memgate: a retrieval-policy gateway in front of long-term memory services")
    .exitOverride()
    .configureOutput({ writeOut: (s) => io.out(s.trimEnd()), writeErr: (s) => io.err(s.trimEnd()) });

  program
    .command("serve")
    .description("run the gateway (configuration from the environment, see README)")
    .action(async () => {
      code = await serveCommand();
    });

  const keys = program.command("keys").description("API keys for the tenants file");
  keys
    .command("hash")
    .description("print the SHA-256 of a key for config/tenants.yaml (reads stdin when no key is given)")
    .argument("[key]", "the API key (prefer stdin: it stays out of shell history)")
    .action(async (key: string | undefined) => {
      code = await keysHashCommand(key, io);
    });
  keys
    .command("new")
    .description("generate a new random API key and print it with its hash")
    .action(async () => {
      code = await keysNewCommand(io);
    });

  const policy = program.command("policy").description("work with policy files");
  policy
    .command("validate")
    .description("validate policy files; exit 0, or 2 with one line per problem")
    .argument("<files...>", "policy files (YAML or JSON)")
    .action(async (files: string[]) => {
      code = await validateCommand(files, io);
    });
  policy
    .command("schema")
    .description("print the JSON Schema of a policy file (for editors)")
    .action(() => {
      code = schemaCommand(io);
    });

  program
    .command("replay")
    .description("run the policy pipeline offline on recorded candidates and print the payload JSON")
    .requiredOption("--policy <file>", "policy file")
    .requiredOption("--input <file>", 'JSON file: {"query", "userId", "results": [Candidate…]}')
    .option("--explain", "include the per-stage trace", false)
    .action(async (opts: { policy: string; input: string; explain: boolean }) => {
      code = await replayCommand(opts, io);
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
