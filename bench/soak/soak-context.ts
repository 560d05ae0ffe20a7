import type { ApiClient } from "./api";
import type { ConsoleUnderTest } from "./console-under-test";
import type { SecretWatch } from "./secrets";
import type { SoakNode } from "./soak-lab";
import type { Switchboard } from "./switchboard";

/** What the load, the chaos driver and the watchers share. */
export type SoakContext = {
  startedAt: number;
  console: ConsoleUnderTest;
  nodes: readonly SoakNode[];
  /** One per node, same order. */
  boards: readonly Switchboard[];
  /** The operator's API client (the load), and the admin's (catalog, key rotation). */
  api: ApiClient;
  adminApi: ApiClient;
  secrets: SecretWatch;
  /** A line in the soak's own log (stderr), stamped with the time since the start. */
  log(line: string): void;
  /** Seconds since the soak's start, as the log and the table say them: `+12.3 s`. */
  since(at?: number): string;
};

export function soakClock(startedAt: number) {
  const since = (at = Date.now()) => `+${((at - startedAt) / 1000).toFixed(1)} s`;
  return {
    since,
    log: (line: string) => process.stderr.write(`[soak ${since()}] ${line}\n`),
  };
}
