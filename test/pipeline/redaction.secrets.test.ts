import { readFileSync } from "node:fs";
import { join } from "node:path";
import { BUILTIN_DETECTORS } from "../../src/pipeline/redaction/detectors";
import { compileRedactor, RedactionPatternError } from "../../src/pipeline/redaction/index";
import { base62, crc32, githubChecksumOk, shannonEntropy } from "../../src/pipeline/redaction/secrets";
import type { Redactor } from "../../src/pipeline/types";
import {
  DETECTORS,
  type DetectorName,
  redactionSchema,
  SECRET_DETECTOR_NAMES,
} from "../../src/policy/schema";
import { githubChecksum, githubToken, jwt, pem, seeded } from "../helpers/secrets";

const R = "[REDACTED]";
const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

function redactor(detectors: readonly DetectorName[], replacement = R): Redactor {
  return compileRedactor(redactionSchema.parse({ enabled: true, detectors: [...detectors], replacement }));
}
const only = (name: DetectorName): Redactor => redactor([name]);
const all = redactor(DETECTORS);

/** `text` with `secret` in it is redacted to `text` with the replacement in its place, by `name` alone. */
function expectRedacted(name: DetectorName, text: string, secret: string): void {
  expect(text).toContain(secret);
  const expected = { text: text.replace(secret, R), fired: [name] };
  expect(only(name).redact(text)).toEqual(expected);
  expect(all.redact(text)).toEqual(expected);
}

function expectKept(name: DetectorName, text: string): void {
  expect(only(name).redact(text)).toEqual({ text, fired: [] });
}

// Fake key material: generated in the right shape, never a real credential.
const GH_RANDOM = "Zx8Kq2Lm9Np4Rs7Tv1Wy3Ab6Cd0Ef5";
const GH = githubToken("ghp_", GH_RANDOM);
const AWS_ID = "AKIAZ7QX2MBV4LK6TPWE";
const AWS_SECRET = "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";
const STRIPE = "sk_live_4Rq8Zx2Lm9Np7Tv1Wy3Ab6Cd";
const GOOGLE = "AIzaSyQ4r8Zx2Lm9Np7Tv1Wy3Ab6Cd0Ef5Gh9Jk";
const OPENAI = `sk-${seeded(1, BASE62, 48)}`;
const OPENAI_PROJ = `sk-proj-${seeded(2, `${BASE62}_-`, 100)}`;
const ANTHROPIC = `sk-ant-api03-${seeded(3, `${BASE62}_-`, 93)}AA`;
const SLACK_BOT = "xoxb-2847193650-4718293056174-Qz8Rk2Lm9Np4Rs7Tv1Wy3Ab6";
const SLACK_HOOK = "https://hooks.slack.com/services/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";
const SIG = "Qz8Rk2Lm9Np4Rs7Tv1Wy3Ab6Cd0Ef5Gh9Jk2Mn4Pq7";
const JWT = jwt({ alg: "HS256", typ: "JWT" }, { sub: "user-42", name: "Test User", iat: 1700000000 }, SIG);
const PEM_BODY = [seeded(4, `${BASE62}+/`, 64), seeded(5, `${BASE62}+/`, 64), `${seeded(6, BASE62, 20)}==`];

describe("checksum and entropy helpers", () => {
  test("crc32 is zlib's CRC-32", () => {
    expect(crc32("123456789")).toBe(0xcbf43926);
    expect(crc32("")).toBe(0);
  });

  test("base62 uses digits, then upper case, then lower case, padded", () => {
    expect(base62(0, 6)).toBe("000000");
    expect(base62(61, 1)).toBe("z");
    expect(base62(62, 2)).toBe("10");
    expect(base62(0xffffffff, 6)).toBe("4gfFC3");
  });

  test("a GitHub token computed in the test has a checksum the detector accepts", () => {
    expect(GH).toBe(`ghp_${GH_RANDOM}${githubChecksum(GH_RANDOM)}`);
    expect(GH).toHaveLength(40);
    expect(githubChecksumOk(GH)).toBe(true);
    expect(githubChecksumOk(`ghp_${GH_RANDOM}000000`)).toBe(false);
  });

  test("Shannon entropy in bits per character", () => {
    expect(shannonEntropy("")).toBe(0);
    expect(shannonEntropy("aaaa")).toBe(0);
    expect(shannonEntropy("abcd")).toBe(2);
    expect(shannonEntropy(BASE62)).toBeCloseTo(Math.log2(62));
  });
});

describe("secrets detectors", () => {
  test("run first (before the PII detectors), in a fixed order", () => {
    const names = BUILTIN_DETECTORS.map((d) => d.name);
    expect(names.slice(0, SECRET_DETECTOR_NAMES.length)).toEqual([...SECRET_DETECTOR_NAMES]);
    expect(names.at(SECRET_DETECTOR_NAMES.length - 1)).toBe("generic_secret");
  });

  test("every secrets detector that can fail cheaply declares a required literal", () => {
    const requires = Object.fromEntries(BUILTIN_DETECTORS.map((d) => [d.name, d.requires]));
    expect(requires).toMatchObject({
      private_key: "PRIVATE KEY",
      jwt: "yJ",
      github_token: "_",
      stripe_key: "k_",
      google_api_key: "AIza",
      openai_key: "k-",
    });
  });

  describe("github_token", () => {
    test.each(["ghp_", "gho_", "ghu_", "ghs_", "ghr_"])("%s with a valid checksum is redacted", (prefix) => {
      const token = githubToken(prefix, GH_RANDOM);
      expectRedacted("github_token", `use ${token} for the CI`, token);
    });

    test("a fine-grained github_pat_ token is redacted", () => {
      const pat = `github_pat_${seeded(7, BASE62, 22)}_${seeded(8, BASE62, 59)}`;
      expect(pat).toHaveLength(93);
      expectRedacted("github_token", `GITHUB_TOKEN="${pat}"`, pat);
    });

    test.each([
      ["a wrong checksum", `ghp_${GH_RANDOM}AAAAAA`],
      ["a checksum off by one character", `${GH.slice(0, -1)}${GH.endsWith("a") ? "b" : "a"}`],
      ["a token glued to more characters", `${GH}x`],
      ["a token inside a longer word", `x${GH}`],
      ["a short github_pat_", `github_pat_${seeded(9, BASE62, 60)}`],
      ["an unknown prefix", `ghx_${GH.slice(4)}`],
    ])("keeps %s", (_what, text) => expectKept("github_token", `token ${text} here`));
  });

  describe("aws_access_key", () => {
    test.each(["AKIA", "ASIA", "ABIA", "ACCA"])("an access key id starting %s is redacted", (prefix) => {
      const id = `${prefix}${AWS_ID.slice(4)}`;
      expectRedacted("aws_access_key", `the key id is ${id}, rotate it`, id);
    });

    test.each([
      "aws_secret_access_key = ",
      "AWS_SECRET_ACCESS_KEY=",
      '"SecretAccessKey": "',
      "secret access key is ",
      "aws_secret_access_key:",
    ])("a secret access key after %j is redacted, the label kept", (label) => {
      expectRedacted("aws_access_key", `config: ${label}${AWS_SECRET}`, AWS_SECRET);
    });

    test.each([
      ["an id with characters outside base32", "AKIAZ7QX2MBV4LK6TP01"],
      ["an id one character short", AWS_ID.slice(0, -1)],
      ["an id glued to more characters", `${AWS_ID}Q`],
      ["an id inside a word", `x${AWS_ID}`],
      ["a 40-character blob without its label", AWS_SECRET],
      ["a label with a 39-character value", `aws_secret_access_key = ${AWS_SECRET.slice(1)}`],
    ])("keeps %s", (_what, text) => expectKept("aws_access_key", `see ${text} now`));
  });

  describe("slack_token", () => {
    test.each([
      SLACK_BOT,
      "xoxp-2847193650-4718293056-4718293056174-9f8e7d6c5b4a39281706f5e4d3c2b1a0",
      "xoxa-2-4718293056174-Qz8Rk2Lm9Np4Rs7Tv1Wy3Ab6",
      "xoxs-2847193650-4718293056174-Qz8Rk2",
    ])("%s is redacted", (token) => expectRedacted("slack_token", `bot token ${token}.`, token));

    test("an incoming-webhook URL is redacted whole", () => {
      expectRedacted("slack_token", `post alerts to ${SLACK_HOOK}.`, SLACK_HOOK);
      const bare = SLACK_HOOK.slice("https://".length);
      expectRedacted("slack_token", `(${bare})`, bare);
    });

    test.each([
      "xoxb-12345",
      "xoxb-nodigitsinthisthingatall",
      "the xoxo-hugs-and-kisses sign-off",
      "https://hooks.slack.com/services/",
      "https://api.slack.com/apps/T04ZQ8RK2LM",
    ])("keeps %j", (text) => expectKept("slack_token", text));
  });

  describe("stripe_key", () => {
    test.each(["sk_live_", "sk_test_", "rk_live_", "pk_live_"])("%s keys are redacted", (prefix) => {
      const key = `${prefix}${STRIPE.slice(8)}`;
      expectRedacted("stripe_key", `STRIPE_KEY=${key}`, key);
    });

    test.each([
      "sk_live_short123",
      "task_live_4Rq8Zx2Lm9Np7Tv1Wy3Ab6Cd",
      "sk_live_aaaaaaaaaaaaaaaaaaaaaaaaaaaa",
      "sk_prod_4Rq8Zx2Lm9Np7Tv1Wy3Ab6Cd",
    ])("keeps %j", (text) => expectKept("stripe_key", text));
  });

  describe("google_api_key", () => {
    test("AIza + 35 characters is redacted", () => {
      expect(GOOGLE).toHaveLength(39);
      expectRedacted("google_api_key", `maps key=${GOOGLE}&libraries=places`, GOOGLE);
    });

    test.each([GOOGLE.slice(0, -1), `${GOOGLE}x`, `x${GOOGLE}`, `${GOOGLE}-abc`])("keeps %j", (text) =>
      expectKept("google_api_key", `key ${text} end`),
    );
  });

  describe("openai_key", () => {
    test.each([
      ["sk- + 48", OPENAI],
      ["sk-proj-", OPENAI_PROJ],
      ["sk-ant-api03- (Anthropic-style)", ANTHROPIC],
    ])("%s is redacted", (_what, key) => expectRedacted("openai_key", `export KEY=${key}\n`, key));

    test.each([
      ["a task list", "our task-management-board-for-the-team-and-everyone"],
      ["47 characters", `sk-${seeded(1, BASE62, 47)}`],
      ["letters only", `sk-${"abcdefghijklmnopqrstuvwx".repeat(2)}`],
      ["a short sk-proj-", `sk-proj-${seeded(2, BASE62, 30)}`],
      ["glued to a word", `mask${OPENAI.slice(2)}`],
    ])("keeps %s", (_what, text) => expectKept("openai_key", text));
  });

  describe("jwt", () => {
    test("a signed JWT is redacted whole", () => {
      expectRedacted("jwt", `Authorization: Bearer ${JWT}`, JWT);
      expectRedacted("jwt", `?token=${JWT}&x=1`, JWT);
    });

    test('an unsigned JWT with alg "none" is redacted', () => {
      const unsigned = jwt({ alg: "none" }, { sub: "user-42" }, "");
      expectRedacted("jwt", `unsigned: ${unsigned} done`, unsigned);
    });

    test.each([
      ["a header that is not JSON", `eyJub3QganNvbiBhdCBhbGw.${JWT.split(".")[1]}.${SIG}`],
      ["a JSON header without alg", jwt({ typ: "JWT", kid: "k1" }, { sub: "x" }, SIG)],
      ["a JSON array header", `${Buffer.from('["alg","HS256"]').toString("base64url")}.e30.${SIG}`],
      ["a signed header with an empty signature", jwt({ alg: "HS256" }, { sub: "x" }, "")],
      ["two segments", JWT.split(".").slice(0, 2).join(".")],
      ["a fourth segment", `${JWT}.${SIG}`],
      ["glued to a word", `x${JWT}`],
    ])("keeps %s", (_what, text) => expectKept("jwt", `value ${text} end`));
  });

  describe("private_key", () => {
    test.each(["", "RSA ", "EC ", "DSA ", "OPENSSH ", "ENCRYPTED "])(
      "a %sPRIVATE KEY block is redacted whole",
      (kind) => {
        const block = pem(`${kind}PRIVATE KEY`, PEM_BODY);
        expectRedacted("private_key", `here is the key:\n${block}\nkeep it safe`, block);
      },
    );

    test("a legacy encrypted block with headers, and a PGP block", () => {
      const legacy = pem("RSA PRIVATE KEY", [
        "Proc-Type: 4,ENCRYPTED",
        "DEK-Info: AES-128-CBC,0A1B2C",
        "",
        ...PEM_BODY,
      ]);
      expectRedacted("private_key", `old key ${legacy} end`, legacy);
      const pgp = pem("PGP PRIVATE KEY BLOCK", ["Version: GnuPG v2", "", ...PEM_BODY]);
      expectRedacted("private_key", `pgp ${pgp} end`, pgp);
    });

    test("a block cut before its END line is redacted to the end of its body", () => {
      const head = `-----BEGIN RSA PRIVATE KEY-----\n${PEM_BODY[0]}\n${PEM_BODY[1]}`;
      expectRedacted("private_key", `truncated: ${head}… (clipped)`, head);
    });

    test("two blocks with prose between: each redacted, the prose kept", () => {
      const a = pem("RSA PRIVATE KEY", PEM_BODY);
      const b = pem("OPENSSH PRIVATE KEY", PEM_BODY);
      const text = `old: ${a}\nnew one (rotated):\n${b}\nthanks`;
      expect(all.redact(text)).toEqual({
        text: `old: ${R}\nnew one (rotated):\n${R}\nthanks`,
        fired: ["private_key"],
      });
    });

    test("a cut block followed by a whole one: the cut one ends with its body, not at the next END line", () => {
      const cut = `-----BEGIN EC PRIVATE KEY-----\n${PEM_BODY[0]}`;
      const whole = pem("EC PRIVATE KEY", PEM_BODY);
      const text = `first ${cut} (clipped) then ${whole} done`;
      expect(all.redact(text).text).toBe(`first ${R} (clipped) then ${R} done`);
    });

    test("in a key-and-certificate bundle only the key goes", () => {
      const cert = pem("CERTIFICATE", PEM_BODY);
      const key = pem("PRIVATE KEY", PEM_BODY);
      expect(all.redact(`${cert}\n${key}\n${cert}`).text).toBe(`${cert}\n${R}\n${cert}`);
    });

    test.each([
      pem("PUBLIC KEY", PEM_BODY),
      pem("CERTIFICATE", PEM_BODY),
      "we talked about the private key ceremony",
    ])("keeps %j", (text) => expectKept("private_key", text));
  });

  describe("generic_secret", () => {
    const VALUE = "Zq8wX2cV9bN4mL7kJ3hG";

    test.each([
      ["password: ", ""],
      ["Password = ", ""],
      ["my password is ", "."],
      ["passwd:", ""],
      ["api_key=", ""],
      ["export API_KEY=", ""],
      ["DB_PASSWORD=", ""],
      ['{"client_secret": "', '"}'],
      ["the API key for staging is ", "."],
      ["Authorization: Bearer ", ""],
      ["credentials: ", ""],
      ["token ", " expires tomorrow"],
      ["--token=", ""],
      ["la contraseña del wifi es ", "."],
      ["La clave de la API es ", "."],
      ["le mot de passe du serveur est ", "."],
      ["mdp : ", ""],
      ["das Passwort für den Server lautet ", "."],
      ["Kennwort: ", ""],
      ["a senha do banco de dados é ", "."],
      ["il token è ", "."],
      ["пароль: ", ""],
      ["密码是", "。"],
      ["パスワードは「", "」です"],
      ["비밀번호는 ", "입니다"],
    ])("a value after %j is redacted, the context kept", (before, after) => {
      expectRedacted("generic_secret", `${before}${VALUE}${after}`, VALUE);
    });

    test("letters in random case, without digits, are a secret too", () => {
      expectRedacted("generic_secret", "password: XkQpLmZrTaWbNcYdVeUf", "XkQpLmZrTaWbNcYdVeUf");
    });

    test("a value on the line after its label is redacted", () => {
      expectRedacted("generic_secret", `password:\n  ${VALUE}`, VALUE);
    });

    test("hex and base64 values after a context word are redacted", () => {
      const hex = "5f4dcc3b5aa765d61d8327deb882cf99";
      expectRedacted("generic_secret", `api key: ${hex}`, hex);
      const b64 = "dGhpcyBpcyBhIGZha2Ugc2VjcmV0IHZhbHVl==";
      expectRedacted("generic_secret", `secret=${b64}`, b64);
    });

    test.each([
      [
        "a random base64 blob without a context word",
        "the blob dGhpcyBpcyBhIGZha2Ugc2VjcmV0IHZhbHVl== is attached",
      ],
      ["a git SHA", "I rebased onto 3f2a9c8e7b6d5a4f3e2d1c0b9a8f7e6d5c4b3a29 yesterday"],
      ["a short git SHA and a tag", "fixed in a1b2c3d (v1.2.3)"],
      ["a UUID", "request id 123e4567-e89b-12d3-a456-426614174000 failed"],
      ["a hash in chat", "sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 matches"],
      ["a short password", "my password is hunter2"],
      ["a pass phrase of one class", "password: correct-horse-battery-staple-forever"],
      ["a low-entropy value", "token: aaaaaaaaaaaaaaaaaaaaaaaaa1"],
      [
        "a context word too far back",
        "the token we discussed in the long meeting last week was 3f2a9c8e7b6d5a4f3e2d",
      ],
      ["a sentence in between", "I changed my password. Build 3f2a9c8e7b6d5a4f3e2d1c0b passed."],
      ["a word that only contains a context word", "secretary: Zq8wX2cV9bN4mL7kJ3hG"],
      ["a snake_case identifier after the word", "token: refresh_token_expiry_seconds_default"],
      ["a camelCase identifier after the word", "the tokens are counted by isWithinTokenLimitWithSpecial"],
      ["a CamelCase pass phrase", "password: CorrectHorseBatteryStaple"],
      [
        "a value on the next line after other words",
        "// allow special tokens when needed\nconst x = Zq8wX2cV9bN4mL7kJ3hG",
      ],
      ["the verb pass", "To enable it, pass it to `Zq8wX2cV9bN4mL7kJ3hG`"],
    ])("keeps %s", (_what, text) => expectKept("generic_secret", text));
  });

  describe("with every detector on", () => {
    test("a Slack token with digit runs is one secret, not a card or a phone number", () => {
      const token = "xoxb-4111111111111111-4155550132-Qz8Rk2Lm9Np4Rs7Tv1Wy3Ab6";
      expect(all.redact(`token ${token} ok`)).toEqual({ text: `token ${R} ok`, fired: ["slack_token"] });
    });

    test("a specific detector wins over generic_secret", () => {
      expect(all.redact(`password: ${GH}`)).toEqual({ text: `password: ${R}`, fired: ["github_token"] });
      expect(all.redact(`aws_secret_access_key=${AWS_SECRET}`)).toEqual({
        text: `aws_secret_access_key=${R}`,
        fired: ["aws_access_key"],
      });
    });

    test("several secrets and PII in one memory", () => {
      const text = `Deploy notes: GitHub ${GH}, Stripe ${STRIPE}, mail ops@example.com, db password: Zq8wX2cV9bN4mL7kJ3hG.`;
      const out = all.redact(text);
      expect(out.text).toBe(`Deploy notes: GitHub ${R}, Stripe ${R}, mail ${R}, db password: ${R}.`);
      expect(out.fired).toEqual(["github_token", "stripe_key", "generic_secret", "email"]);
    });

    test.each([AWS_ID, GH, GOOGLE, "password:Zq8wX2cV9bN4mL7kJ3hG"])(
      "a replacement that looks like a secret (%j) is refused",
      (replacement) => {
        expect(() => redactor([], replacement)).toThrow(RedactionPatternError);
      },
    );
  });

  describe("pathological inputs (200,000 characters) finish in linear time", () => {
    const N = 200_000;
    test.each([
      ["eyJ runs", "eyJ".repeat(N / 3)],
      ["eyJ segments", "eyJa.".repeat(N / 5)],
      ["sk- runs", "sk-".repeat(N / 3)],
      ["ghp_ runs", "ghp_".repeat(N / 4)],
      ["AKIA runs", "AKIA".repeat(N / 4)],
      ["xoxb- runs", "xoxb-".repeat(N / 5)],
      ["BEGIN lines without END", "-----BEGIN PRIVATE KEY-----\n".repeat(N / 28)],
      ["context words", "password: token: secret ".repeat(N / 24)],
      ["one long base64 run", seeded(10, `${BASE62}+/`, N)],
      ["a long run after a context word", `password: ${seeded(11, BASE62, N)}`],
      ["label chains", "api_key=".repeat(N / 8)],
      ["AWS secret labels", "secret_access_key = ".repeat(N / 20)],
      ["webhook prefixes", "hooks.slack.com/services/".repeat(N / 25)],
      ["19-character runs after context words", "password: Ab1Cd2Ef3Gh4Ij5Kl6M ".repeat(N / 30)],
      [
        "one BEGIN line then END lines of public keys",
        `-----BEGIN PRIVATE KEY-----\n${"-----END PUBLIC KEY-----\n".repeat(N / 25)}`,
      ],
    ])("%s", (_name, text) => {
      const start = process.cpuUsage();
      all.redact(text);
      // Linear passes take well under 100 ms; a quadratic one (a search per BEGIN line that rescans the rest
      // of the text, for instance) takes seconds. CPU time, so a loaded machine's wall clock does not count.
      const { user, system } = process.cpuUsage(start);
      expect((user + system) / 1000).toBeLessThan(1000);
    });
  });
});

describe("eval/redaction/secrets.jsonl", () => {
  interface Case {
    text: string;
    expect: Array<{ detector: string; match: string }>;
    lang: string;
    note: string;
  }
  const cases = readFileSync(join(__dirname, "../../eval/redaction/secrets.jsonl"), "utf8")
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line) as Case);
  const secrets = redactor(SECRET_DETECTOR_NAMES);

  test("has 100+ cases: positives of every secrets detector in several languages, and hard negatives", () => {
    expect(cases.length).toBeGreaterThanOrEqual(100);
    expect(cases.filter((c) => c.expect.length === 0).length).toBeGreaterThanOrEqual(30);
    for (const name of SECRET_DETECTOR_NAMES) {
      const positives = cases.filter((c) => c.expect.some((e) => e.detector === name));
      expect([name, positives.length >= 7]).toEqual([name, true]);
    }
    expect(new Set(cases.map((c) => c.lang)).size).toBeGreaterThanOrEqual(8);
  });

  test("the secrets detectors redact exactly the labelled stretches", () => {
    for (const c of cases) {
      let expected = c.text;
      for (const e of c.expect) expected = expected.replace(e.match, R);
      const fired = [...new Set(c.expect.map((e) => e.detector))].sort();
      const out = secrets.redact(c.text);
      expect({ note: c.note, text: out.text, fired: [...out.fired].sort() }).toEqual({
        note: c.note,
        text: expected,
        fired,
      });
    }
  });
});
