import { randomInt } from "node:crypto";
import { parseArgs } from "node:util";
import { z } from "zod";

export const USAGE = `Usage: npm run soak -- [--minutes N] [--seed S] [--nodes K]
  --minutes N   how long the soak runs after start-up (default 10; CI runs 2, at least 2):
                load and chaos, a quiet last 75 s (no fault) for the runs to settle, and
                then the invariants are checked
  --seed S      a whole number 0..4294967295 (default: a random one, printed); the same seed
                gives the same load and chaos schedule, so a failure can be replayed
  --nodes K     lab nodes, half fresh Debian 13, half onboarded Proxmox (default 4, 2..8)
  --keep-log    keep the console's output (npm start's, every process's) in the temp folder
                even when every invariant held; it is always kept when one broke`;

const ZOptions = z.object({
  minutes: z.coerce
    .number({ error: "--minutes: a number of minutes, e.g. 2" })
    .min(2, "--minutes: at least 2 (the last 75 s are quiet)")
    .max(24 * 60, "--minutes: at most a day (1440)"),
  seed: z.coerce
    .number({ error: "--seed: a whole number" })
    .int("--seed: a whole number")
    .min(0, "--seed: 0 to 4294967295")
    .max(4_294_967_295, "--seed: 0 to 4294967295"),
  nodes: z.coerce
    .number({ error: "--nodes: a whole number" })
    .int("--nodes: a whole number")
    .min(2, "--nodes: at least 2 (one fresh, one onboarded)")
    .max(8, "--nodes: at most 8 on a 2-core machine"),
});
export type SoakOptions = z.infer<typeof ZOptions> & { help: boolean; keepLog: boolean };

export class SoakUsageError extends Error {}

export function parseSoakOptions(argv: readonly string[]): SoakOptions {
  let values;
  try {
    ({ values } = parseArgs({
      args: [...argv],
      strict: true,
      allowPositionals: false,
      options: {
        minutes: { type: "string", default: "10" },
        seed: { type: "string" },
        nodes: { type: "string", default: "4" },
        help: { type: "boolean", short: "h", default: false },
        "keep-log": { type: "boolean", default: false },
      },
    }));
  } catch (error) {
    throw new SoakUsageError(`${(error as Error).message}\n${USAGE}`);
  }
  const parsed = ZOptions.safeParse({ ...values, seed: values.seed ?? randomInt(2 ** 32 - 1) });
  if (!parsed.success) {
    throw new SoakUsageError(`${parsed.error.issues.map((i) => i.message).join("\n")}\n${USAGE}`);
  }
  return { ...parsed.data, help: values.help, keepLog: values["keep-log"] };
}

/** The command that runs this soak again with the same schedule. */
export function replayLine(options: SoakOptions): string {
  return `npm run soak -- --minutes ${options.minutes} --seed ${options.seed} --nodes ${options.nodes}`;
}
