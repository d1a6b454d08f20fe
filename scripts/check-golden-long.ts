/**
 * Checks one or more users of the long-conversation golden set (eval/golden/long/) against the rules it is written
 * to: `npx tsx scripts/check-golden-long.ts [user …]` (no argument: every user). Prints each problem and a
 * summary per user; exits 1 when a rule is broken. test/eval/golden-long.test.ts runs the same checks.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { checkLongUser, LONG_DIR } from "../src/eval/long-check";

const users =
  process.argv.length > 2
    ? process.argv.slice(2)
    : readdirSync(LONG_DIR)
        .filter((f) => f.endsWith(".memories.jsonl"))
        .map((f) => f.replace(/\.memories\.jsonl$/, ""))
        .sort();

let failed = false;
for (const user of users) {
  const memories = readFileSync(join(LONG_DIR, `${user}.memories.jsonl`), "utf8");
  const questions = readFileSync(join(LONG_DIR, `${user}.questions.jsonl`), "utf8");
  const report = checkLongUser(user, memories, questions);
  for (const p of report.problems) console.log(`${user}: ${p}`);
  console.log(`${user}: ${report.summary}`);
  if (report.problems.length > 0) failed = true;
}
process.exit(failed ? 1 : 0);
