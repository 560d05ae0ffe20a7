import { z } from "zod";

/**
 * Ticks one worker process runs at once. A visit mostly waits on the host (SSH round trips,
 * apt, the Proxmox API), not on this process's CPU, so slots are sized for waiting: on 2 cores,
 * 10 onboardings at once took 1.85 × one host's time with 4 slots and 1.36–1.41 × with 8
 * (bench:onboard). Each slot may hold two database connections (docs/production.md, "Workers").
 */
export const DEFAULT_WORKER_CONCURRENCY = 8;

const concurrencySchema = z.coerce.number().int().min(1).max(64);

/** `CLUPILOT_WORKER_CONCURRENCY`, or the default when unset; anything else stops the start. */
export function concurrencyFromEnv(value: string | undefined): number {
  if (value === undefined || value.trim() === "") return DEFAULT_WORKER_CONCURRENCY;
  const parsed = concurrencySchema.safeParse(value.trim());
  if (!parsed.success)
    throw new Error(
      `CLUPILOT_WORKER_CONCURRENCY=${JSON.stringify(value)} is not a whole number from 1 to 64 (ticks one worker process runs at once); set one, or unset it for ${DEFAULT_WORKER_CONCURRENCY}`,
    );
  return parsed.data;
}
