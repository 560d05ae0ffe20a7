import fc from "fast-check";

/*
 * Hostile inputs for the fuzz tests: a fixed corpus of known-bad values (every class the issue
 * names, spelled out so a reader sees what is covered) plus fast-check arbitraries that mix and
 * nest them with random data. Sampling is seeded: a failure names its seed and case and replays.
 */

const RTL_OVERRIDE = "\u202E";
const ZERO_WIDTH = "\u200B\u200C\u200D\uFEFF";

/** Strings that have broken (or tried to break) real software. */
export const HOSTILE_STRINGS: readonly string[] = [
  "",
  " ",
  "\t\n\r",
  // shell metacharacters
  "; reboot",
  "| cat /etc/shadow",
  "&& rm -rf /",
  "$(id)",
  "`id`",
  "${IFS}id",
  "a\nrm -rf /",
  "'\"; exit 1; #",
  "pve-01; touch /tmp/pwned",
  "-oProxyCommand=sh -c id",
  "--help",
  // SQL-looking
  "' OR 1=1 --",
  "'; drop table hosts; --",
  '" OR ""="',
  "1; select pg_sleep(10)",
  "%",
  "_",
  "\\",
  // path traversal
  "../../etc/passwd",
  "..%2f..%2fetc%2fpasswd",
  "....//....//etc/passwd",
  "/etc/passwd\0.png",
  "C:\\Windows\\System32",
  // markup and templates
  "<script>alert(1)</script>",
  "<img src=x onerror=alert(1)>",
  "javascript:alert(1)",
  "{{7*7}}",
  "${7*7}",
  "__proto__",
  "constructor",
  "prototype",
  // Unicode tricks
  `${RTL_OVERRIDE}gpj.exe`,
  `admin${ZERO_WIDTH}`,
  "аdmin", // Cyrillic а: a homoglyph of "admin"
  "ｐｖｅ－０１", // full-width
  "pve\u000001",
  "\0",
  "\uD800", // lone high surrogate
  "\uDFFF", // lone low surrogate
  "\uFFFD\uFFFE\uFFFF",
  "\u0085\u2028\u2029",
  "e\u0301\u0301\u0301\u0301\u0301", // stacked combining marks
  "\u00C0\u00AF", // overlong "/" bytes read as Latin-1
  "%C0%AF",
  "🦄".repeat(100),
  // numbers as text
  "NaN",
  "Infinity",
  "-1",
  "0",
  "1e308",
  "9".repeat(400),
  "0x10",
  "1_000",
  "22 ",
  " 22",
  // ids
  "00000000-0000-0000-0000-000000000000",
  "0b7c6f1e-8d2a-4c1b-9f3e-2a5d6c7b8e9fX",
  "null",
  "undefined",
  "true",
  "[]",
  "{}",
  // oversized
  "A".repeat(70_000),
  "é".repeat(20_000),
];

export const HOSTILE_NUMBERS: readonly unknown[] = [
  0,
  -1,
  -0,
  1.5,
  NaN,
  Infinity,
  -Infinity,
  Number.MAX_SAFE_INTEGER + 2,
  Number.MIN_SAFE_INTEGER - 2,
  1e308,
  2 ** 31,
  2 ** 53,
];

export const HOSTILE_VALUES: readonly unknown[] = [
  ...HOSTILE_STRINGS,
  ...HOSTILE_NUMBERS,
  null,
  undefined,
  true,
  false,
  [],
  {},
  [null],
  { $gt: "" },
  JSON.parse('{"__proto__":{"admin":true}}') as unknown,
  ["a", "b"],
  { nested: { deeper: { deepest: ["x", { y: "z" }] } } },
];

/** A value from the corpus or fast-check's own generators, possibly nested in arrays/objects. */
export function hostileValue(): fc.Arbitrary<unknown> {
  const leaf = fc.oneof(
    { weight: 5, arbitrary: fc.constantFrom(...HOSTILE_VALUES) },
    { weight: 2, arbitrary: fc.string({ unit: "binary", maxLength: 300 }) },
    { weight: 1, arbitrary: fc.string({ unit: "grapheme", maxLength: 50 }) },
    { weight: 1, arbitrary: fc.double() },
    { weight: 1, arbitrary: fc.integer() },
    { weight: 1, arbitrary: fc.bigInt().map((value) => value.toString()) },
    { weight: 1, arbitrary: fc.uuid() },
    { weight: 1, arbitrary: fc.date({ noInvalidDate: false }).map((d) => String(d)) },
  );
  return fc.oneof(
    { weight: 8, arbitrary: leaf },
    { weight: 1, arbitrary: fc.array(leaf, { maxLength: 5 }) },
    { weight: 1, arbitrary: fc.dictionary(fc.string({ maxLength: 10 }), leaf, { maxKeys: 4 }) },
  );
}

/** A string-only hostile value (path segments, query values, form fields, headers). */
export function hostileString(): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 5, arbitrary: fc.constantFrom(...HOSTILE_STRINGS) },
    { weight: 2, arbitrary: fc.string({ unit: "binary", maxLength: 200 }) },
    { weight: 1, arbitrary: fc.string({ unit: "grapheme-ascii", maxLength: 40 }) },
    { weight: 1, arbitrary: fc.uuid() },
    {
      weight: 1,
      arbitrary: fc
        .tuple(fc.constantFrom(...HOSTILE_STRINGS), fc.constantFrom(...HOSTILE_STRINGS))
        .map(([a, b]) => `${a}${b}`.slice(0, 5_000)),
    },
  );
}

/**
 * Every field name the console's forms and JSON bodies use (and a few they do not), so hostile
 * values land where validation has to look at them, not only in keys nobody reads.
 */
export const FIELD_NAMES = [
  "name",
  "address",
  "sshPort",
  "sshUser",
  "authMethod",
  "password",
  "privateKey",
  "passphrase",
  "apiPort",
  "credential",
  "consoleKeyId",
  "slug",
  "title",
  "planId",
  "planVersionId",
  "templateVmid",
  "cores",
  "memoryMib",
  "diskGib",
  "saleStartsAt",
  "saleEndsAt",
  "role",
  "disabled",
  "userId",
  "tokenId",
  "runId",
  "hostId",
  "label",
  "currentPassword",
  "newPassword",
  "setupToken",
  "next",
  "confirm",
  "__proto__",
  "constructor",
] as const;

export const QUERY_KEYS = [
  "q",
  "state",
  "sort",
  "dir",
  "page",
  "limit",
  "cursor",
  "failedStep",
  "needsAttention",
  "after",
  "download",
  "all",
  "action",
  "actor",
  "target",
  "outcome",
  "from",
  "to",
] as const;

/** An object with some known fields set to hostile values (and maybe unknown extra fields). */
export function hostileObject(base: Record<string, unknown> = {}): fc.Arbitrary<unknown> {
  return fc
    .tuple(
      fc.dictionary(fc.constantFrom(...FIELD_NAMES), hostileValue(), { minKeys: 1, maxKeys: 4 }),
      fc.boolean(),
    )
    .map(([fields, keepBase]) => ({ ...(keepBase ? base : {}), ...fields }));
}
