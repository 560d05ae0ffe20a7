import { NutConnection } from "@/lib/power/ups/nut/connection";

/** How often the bench asks upsd for the status while it waits for a flip to show. */
export const WATCH_INTERVAL_MS = 20;

/**
 * The moment upsd first reports a status with every word of `status` (`OB LB`; a primary
 * upsmon may add FSD right after) for a UPS: its own NUT connection asks every
 * WATCH_INTERVAL_MS and resolves with the time the first matching answer arrived (so upsd
 * began reporting it at most one interval plus a round trip earlier). This is the flip's time
 * zero for both the console and upsmon: dummy-ups re-reads its `.dev` file only once a second,
 * a delay neither watcher can beat, so it is measured separately and left out of both figures.
 */
export async function whenUpsdReports(
  options: { port: number; ups: string; status: string },
  timeoutMs: number,
): Promise<number> {
  const connection = new NutConnection({
    host: "127.0.0.1",
    port: options.port,
    reconnectBackoff: { initialMs: 50, maxMs: 200 },
  });
  const deadline = Date.now() + timeoutMs;
  try {
    for (;;) {
      const asked = Date.now();
      const status = await connection
        .listVar(options.ups, 1000)
        .then((vars) => vars.get("ups.status") ?? "")
        .catch(() => "");
      const words = new Set(status.split(" "));
      if (options.status.split(" ").every((word) => words.has(word))) return Date.now();
      if (Date.now() > deadline) {
        throw new Error(
          `upsd did not report "${options.status}" for ${options.ups} within ${timeoutMs / 1000} s (last: "${status}")`,
        );
      }
      await new Promise((resolve) =>
        setTimeout(resolve, Math.max(0, WATCH_INTERVAL_MS - (Date.now() - asked))),
      );
    }
  } finally {
    await connection.close().catch(() => {});
  }
}
