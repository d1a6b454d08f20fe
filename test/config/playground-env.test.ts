import { EnvError, parseEnv } from "../../src/config/env";

/** MEMGATE_PLAYGROUND and MEMGATE_PLAYGROUND_GOLDEN from the environment, and the one-line error for a mistake. */
describe("the policy playground from the environment", () => {
  test("off unless set; a golden set with the playground on", () => {
    expect(parseEnv({}).MEMGATE_PLAYGROUND).toBe("off");
    const env = parseEnv({
      MEMGATE_PLAYGROUND: "on",
      MEMGATE_PLAYGROUND_GOLDEN: "eval/golden/basic/questions.jsonl",
    });
    expect(env.MEMGATE_PLAYGROUND_GOLDEN).toBe("eval/golden/basic/questions.jsonl");
  });

  test.each([
    [{ MEMGATE_PLAYGROUND_GOLDEN: "q.jsonl" }],
    [{ MEMGATE_PLAYGROUND: "off", MEMGATE_PLAYGROUND_GOLDEN: "q.jsonl" }],
  ])("%j is refused, not silently ignored", (env) => {
    expect(() => parseEnv(env)).toThrow(EnvError);
    expect(() => parseEnv(env)).toThrow(
      /^MEMGATE_PLAYGROUND_GOLDEN: only applies with MEMGATE_PLAYGROUND=on \(got "q\.jsonl"\)$/,
    );
  });

  test("an unknown value names the variable", () => {
    expect(() => parseEnv({ MEMGATE_PLAYGROUND: "yes" })).toThrow(
      /^MEMGATE_PLAYGROUND: must be "on" or "off"/,
    );
  });
});
