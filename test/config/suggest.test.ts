import { closest, editDistance, knownKeysAt, suggestKey } from "../../src/config/suggest";
import { policySchema } from "../../src/policy/schema";
import { tenantsFileSchema } from "../../src/tenants/schema";

describe("did you mean", () => {
  test("edit distance counts an adjacent swap as one edit, case-insensitively", () => {
    expect(editDistance("budgt", "budget")).toBe(1);
    expect(editDistance("topk", "topK")).toBe(0);
    expect(editDistance("retreival", "retrieval")).toBe(1);
    expect(editDistance("", "abc")).toBe(3);
  });

  test("the closest candidate within the typo limit, or none", () => {
    expect(closest("budgt", ["budget", "ranking"])).toBe("budget");
    expect(closest("colour", ["backend", "budget"])).toBeUndefined();
    expect(closest("ab", ["xy"])).toBeUndefined(); // two edits on a short word is not a typo
  });

  test("the keys a schema accepts at a path, through defaults, optionals, arrays and unions", () => {
    expect(knownKeysAt(policySchema, ["retrieval"])).toContain("maxTokens");
    expect(knownKeysAt(policySchema, ["ranking", "weights", "factual"])).toContain("lexical");
    expect(knownKeysAt(policySchema, ["redaction", "patterns", 0])).toEqual(["name", "pattern", "flags"]);
    expect(knownKeysAt(tenantsFileSchema, ["tenants", 2, "keys", 0])).toContain("scopes");
    expect(knownKeysAt(policySchema, ["nosuch"])).toEqual([]);
    expect(suggestKey(policySchema, ["budget"], "packng")).toBe("packing");
    expect(suggestKey(policySchema, [], "__proto__")).toBeUndefined();
  });
});
