import { and, eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDb, type Database } from "@/lib/db/client";
import { trackReachability } from "@/lib/db/reachability";
import { powerEvents, upsMonitorState, upsReadings } from "@/lib/db/schema";
import { startLabUps, type LabUps } from "@/lab/ups/lab-ups";
import { addUps, nutSourceOf } from "@/test/fixtures/power";
import { startRestartablePostgres, type RestartablePostgres } from "@/test/restartable-postgres";
import { waitFor } from "@/test/worker-process";
import { startPowerMonitor, type PowerMonitor } from "./power-monitor";

/**
 * PostgreSQL goes away while the UPS goes on battery: the monitor keeps reading and deciding,
 * says so once, and when the database is back it records the outage with the console's clock
 * as it saw it — the transition time from during the gap, not from the moment it could write.
 */

let postgres: RestartablePostgres;
let handle: ReturnType<typeof createDb>;
let db: Database;
let ups: LabUps;
let upsId: string;
let monitor: PowerMonitor;
const lines: string[] = [];

beforeAll(async () => {
  postgres = await startRestartablePostgres();
  handle = createDb(postgres.url, 2, trackReachability({ log: () => {}, meanwhile: "" }));
  db = handle.db;
  ups = await startLabUps({ name: "rack-a", snmp: false });
  upsId = await addUps(db, "rack-a", nutSourceOf(ups));
  monitor = await startPowerMonitor({
    connectionString: postgres.url,
    supervisorIntervalMs: 500,
    log: (line) => lines.push(line),
  });
}, 120_000);

afterAll(async () => {
  await monitor?.stop();
  await ups?.stop();
  await handle?.pool.end();
  await postgres?.close();
});

const stateRow = async () =>
  (await db.select().from(upsMonitorState).where(eq(upsMonitorState.upsId, upsId)))[0];

describe("the power monitor while PostgreSQL is away", () => {
  it("keeps the on-battery clock from the transition it saw during the outage and writes it once the database is back", async () => {
    await waitFor(
      "a reading on mains",
      async () => (await stateRow())?.lastReading?.onBattery === false,
    );
    await postgres.stop("kill");
    const pulledAt = Date.now();
    ups.control.pullPlug();
    await new Promise((resolve) => setTimeout(resolve, 3000));
    const back = Date.now();
    await postgres.start();

    const row = await waitFor(
      "the outage recorded",
      async () => {
        const state = await stateRow().catch(() => undefined);
        return state?.onBatterySince && state;
      },
      30_000,
    );
    // The clock started when the monitor saw the transition, while nothing could be written.
    expect(row.onBatterySince!.getTime()).toBeGreaterThanOrEqual(pulledAt - 100);
    expect(row.onBatterySince!.getTime()).toBeLessThan(back);
    expect(row.leaseOwner).toBe(monitor.ownerId);
    const [event] = await db
      .select()
      .from(powerEvents)
      .where(and(eq(powerEvents.upsId, upsId), eq(powerEvents.kind, "ups.on_battery")));
    expect(event!.at.getTime()).toBe(row.onBatterySince!.getTime());
    // The readings on battery taken during the gap are in the history too.
    const gap = await db
      .select()
      .from(upsReadings)
      .where(and(eq(upsReadings.upsId, upsId), eq(upsReadings.onBattery, true)));
    expect(gap.filter((r) => r.at.getTime() < back).length).toBeGreaterThanOrEqual(2);
    // Said once, not once per poll.
    expect(lines.filter((line) => line.includes("could not record its reading"))).toHaveLength(1);
    expect(lines.some((line) => line.includes("recording again"))).toBe(true);
  });
});
