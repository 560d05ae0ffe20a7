import fs from "node:fs";
import path from "node:path";
import fc from "fast-check";
import { beforeAll, describe, expect, it, vi } from "vitest";
import { UNEXPECTED_MESSAGE } from "@/lib/api/respond";
import { SESSION_COOKIE } from "@/lib/auth/session-cookie";
import { ensureConsoleKeyAt } from "@/lib/console-key/ensure-at-start";
import { getDb, getPool } from "@/lib/db/client";
import { createHost } from "@/lib/hosts/create-host";
import { createTestUser } from "@/test/auth";
import { registerProcessTestDatabase } from "@/test/process-database";
import { FIELD_NAMES, hostileObject, hostileString, hostileValue } from "./hostile";
import { fuzzInBatches } from "./batches";
import { FUZZ_RUNS, FUZZ_SEED } from "./settings";

/*
 * Every server action in lib/actions (found by listing the folder, so a new action is fuzzed
 * without editing this file) gets FUZZ_RUNS hostile inputs (test/fuzz/settings.ts): FormData
 * and plain objects with hostile fields, and inputs of the wrong type altogether. An action runs here as it runs in Next.js,
 * signed in as an admin through the session cookie; only the request scope Next.js provides
 * (the cookie jar, request headers, cache revalidation) is stood in for. For each input: the
 * action answers with a result, never the generic "something went wrong" (a 500's twin), and a
 * refused input changes nothing in the database and queues no job.
 */

const cookieJar = vi.hoisted(() => new Map<string, string>());

vi.mock("next/headers", () => ({
  cookies: async () => ({
    get: (name: string) =>
      cookieJar.has(name) ? { name, value: cookieJar.get(name)! } : undefined,
    set: (name: string | { name: string; value: string }, value?: string) => {
      if (typeof name === "object") cookieJar.set(name.name, name.value);
      else cookieJar.set(name, value ?? "");
    },
    delete: (name: string) => cookieJar.delete(name),
    has: (name: string) => cookieJar.has(name),
    getAll: () => [...cookieJar].map(([name, value]) => ({ name, value })),
  }),
  headers: async () =>
    new Headers({ "x-forwarded-for": "203.0.113.7", "user-agent": "fuzz", host: "test" }),
}));
vi.mock("next/cache", () => ({
  revalidatePath: () => undefined,
  revalidateTag: () => undefined,
  updateTag: () => undefined,
  refresh: () => undefined,
}));

const CASES_PER_ACTION = FUZZ_RUNS;
const BATCH = 50;
const SEED = FUZZ_SEED;

type Action = (...args: unknown[]) => Promise<unknown>;

const actionsDir = path.resolve(import.meta.dirname, "../../lib/actions");
// Sub-folders too (lib/actions/power/…), after the top level so existing seeds stay put; only
// the "use server" modules: a folder's helpers are not actions.
const actionFiles = fs
  .readdirSync(actionsDir, { recursive: true, encoding: "utf8" })
  .filter((file) => file.endsWith(".ts") && !file.endsWith(".test.ts"))
  .filter((file) => file !== "action-result.ts")
  .filter((file) =>
    /^\s*["']use server["']/.test(fs.readFileSync(path.join(actionsDir, file), "utf8")),
  )
  .sort(
    (a, b) => Number(a.includes(path.sep)) - Number(b.includes(path.sep)) || a.localeCompare(b),
  );

const database = registerProcessTestDatabase();
let adminSession = "";
/** Real ids, so hostile fields also reach actions that found their target. */
const base: Record<string, unknown> = {};

beforeAll(async () => {
  await ensureConsoleKeyAt(database.url); // as `npm start` does before serving
  const admin = await createTestUser(getDb(), "admin");
  adminSession = admin.sessionToken;
  // The targets of id fields are never the fuzzing admin (disabling it would end the run).
  const victim = await createTestUser(getDb(), "viewer");
  const { hostId, runId } = await createHost(
    getDb(),
    {
      name: "fuzz-base",
      address: "127.0.0.1",
      sshPort: 1,
      apiPort: 8006,
      sshUser: "root",
      authMethod: "password",
      password: "fuzz-base-password",
    } as Parameters<typeof createHost>[1],
    "fuzz",
  );
  const { rows } = await getPool().query<{ id: string }>(
    "select id from api_tokens where user_id = $1",
    [victim.user.id],
  );
  Object.assign(base, { hostId, runId, userId: victim.user.id, tokenId: rows[0]!.id });
}, 120_000);

type Input = { kind: "form"; fields: Array<[string, string]> } | { kind: "value"; value: unknown };

const inputArbitrary: fc.Arbitrary<Input> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc
      .array(
        fc.tuple(fc.oneof(fc.constantFrom(...FIELD_NAMES), hostileString()), hostileString()),
        {
          minLength: 1,
          maxLength: 6,
        },
      )
      .map((fields) => ({ kind: "form" as const, fields })),
  },
  { weight: 4, arbitrary: hostileObject(base).map((value) => ({ kind: "value" as const, value })) },
  { weight: 2, arbitrary: hostileValue().map((value) => ({ kind: "value" as const, value })) },
);

function materialise(input: Input): unknown {
  if (input.kind === "value") return input.value;
  const form = new FormData();
  // Real ids first (as hidden inputs carry them), then the hostile fields.
  for (const [key, value] of Object.entries(base)) {
    if (input.fields.some(([field]) => field === key)) continue;
    if (typeof value === "string") form.append(key, value);
  }
  for (const [key, value] of input.fields) form.append(key, value);
  return form;
}

function isRedirect(error: unknown): boolean {
  return String((error as { digest?: unknown })?.digest ?? "").startsWith("NEXT_REDIRECT");
}

type Outcome = { accepted: boolean; describe: string; problem: string | null };

async function call(action: Action, name: string, input: Input, index: number): Promise<Outcome> {
  const describe = `${name} case ${index} (seed ${SEED}): ${JSON.stringify(
    input.kind === "form" ? input.fields : input.value,
  )?.slice(0, 400)}`;
  // Each call signs in afresh: an accepted sign-in or setup replaces the cookie.
  cookieJar.set(SESSION_COOKIE, adminSession);
  try {
    const value = materialise(input);
    const result = (action.length >= 2 ? await action(null, value) : await action(value)) as {
      ok?: unknown;
      message?: unknown;
      fieldErrors?: unknown;
    };
    if (typeof result !== "object" || result === null || typeof result.ok !== "boolean") {
      return { accepted: false, describe, problem: `returned ${JSON.stringify(result)}` };
    }
    if (result.ok) return { accepted: true, describe, problem: null };
    if (result.message === UNEXPECTED_MESSAGE) {
      return { accepted: false, describe, problem: "answered with the unexpected-error message" };
    }
    if (typeof result.message !== "string" || typeof result.fieldErrors !== "object") {
      return { accepted: false, describe, problem: `malformed failure ${JSON.stringify(result)}` };
    }
    return { accepted: false, describe, problem: null };
  } catch (error) {
    if (isRedirect(error)) return { accepted: true, describe, problem: null };
    return { accepted: false, describe, problem: `threw ${String(error).slice(0, 300)}` };
  }
}

const actions = await Promise.all(
  actionFiles.map(async (file) => {
    const actionModule = (await import(path.join(actionsDir, file))) as Record<string, unknown>;
    return Object.entries(actionModule)
      .filter((entry): entry is [string, Action] => typeof entry[1] === "function")
      .map(([name, action]) => ({ name: `${file}:${name}`, action }));
  }),
).then((lists) => lists.flat());

describe("fuzz: every server action in lib/actions", () => {
  it("finds the server actions by listing the folder", () => {
    expect(actions.length).toBeGreaterThanOrEqual(15);
  });

  for (const [index, { name, action }] of actions.entries()) {
    // An action without input (sign-out) has nothing to fuzz.
    it.skipIf(action.length === 0)(
      `${name}: ${CASES_PER_ACTION} hostile inputs, always a result, refused ones change nothing`,
      async () => {
        const pool = getPool();
        const refused = await fuzzInBatches({
          pool,
          arbitrary: inputArbitrary,
          runs: CASES_PER_ACTION,
          seed: SEED + 1000 + index,
          batchSize: BATCH,
          attempt: (input, i) => call(action, name, input, i),
          inspect: (outcome) => expect(outcome.problem, outcome.describe).toBeNull(),
        });
        // Hidden-field ids make some inputs valid (an abort of the seeded run is fine); the
        // hostile rest must have been refused, not ignored.
        expect(refused).toBeGreaterThan(CASES_PER_ACTION / 4);
      },
    );
  }
});
