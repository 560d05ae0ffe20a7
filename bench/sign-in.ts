/**
 * `npm run bench:sign-in -- [--attempts N]`: how long a refused sign-in takes for a name that
 * does not exist, against the baseline in the same run: a real name with a wrong password. An
 * attacker who could tell the two apart by the answer's time would learn which names are real;
 * the console spends the same Argon2 work on both (lib/auth/password.ts), so the ratio is near
 * 1. Both kinds alternate, each from its own address (the rate limit counts name and address),
 * against an embedded Postgres of the bench's own.
 *
 * Prints `label: value unit` lines and ends by itself (support/run-bench.ts).
 */
import { parseArgs } from "node:util";
import { signIn } from "@/lib/auth/sign-in";
import { createUser } from "@/lib/auth/users";
import { migrateDatabase } from "@/lib/db/migrate";
import { AppError } from "@/lib/errors";
import { openBenchDb, startBenchPostgres } from "./support/postgres";
import { percentile, report } from "./support/report";
import { runBench } from "./support/run-bench";

const USAGE = `Usage: npm run bench:sign-in -- [--attempts N]
  --attempts N   refused sign-ins of each kind (default 100)`;

async function main() {
  const { values } = parseArgs({
    options: { attempts: { type: "string" }, help: { type: "boolean" } },
  });
  if (values.help) {
    console.log(USAGE);
    return;
  }
  const attempts = Number(values.attempts ?? 100);
  if (!Number.isInteger(attempts) || attempts < 10)
    throw new Error(`--attempts must be a whole number ≥ 10\n${USAGE}`);

  const pg = await startBenchPostgres("sign-in");
  const url = await pg.createDatabase("clupilot");
  await migrateDatabase(url);
  const { db } = openBenchDb(url, 4);
  const user = await createUser(db, {
    name: "bench-known",
    role: "viewer",
    password: "the bench user's real password",
  });

  let address = 0;
  /** One refused sign-in's duration in ms; anything but a refusal stops the bench. */
  const refused = async (name: string): Promise<number> => {
    address += 1;
    const started = performance.now();
    const error = await signIn(db, {
      name,
      password: "a wrong password",
      address: `10.${(address >> 16) & 255}.${(address >> 8) & 255}.${address & 255}`,
    }).then(
      () => null,
      (e: unknown) => e,
    );
    const ms = performance.now() - started;
    if (!(error instanceof AppError) || error.code !== "unauthenticated")
      throw new Error(`a sign-in that should be refused was not: ${String(error)}`);
    return ms;
  };

  // Warm-up: the dummy hash is made on first use, and the first queries pay for their plans.
  for (let i = 0; i < 5; i++) {
    await refused(user.name);
    await refused(`nobody-${i}`);
  }
  const known: number[] = [];
  const unknown: number[] = [];
  for (let i = 0; i < attempts; i++) {
    known.push(await refused(user.name));
    unknown.push(await refused(`nobody-by-this-name-${i}`));
  }

  report("baseline: wrong password for a real name, p50", percentile(known, 50), "ms");
  report("baseline: wrong password for a real name, p95", percentile(known, 95), "ms");
  report("unknown name, p50", percentile(unknown, 50), "ms");
  report("unknown name, p95", percentile(unknown, 95), "ms");
  report(
    "unknown name ÷ real name, p50 (1 = indistinguishable)",
    percentile(unknown, 50) / percentile(known, 50),
    "×",
  );
}

runBench(main);
