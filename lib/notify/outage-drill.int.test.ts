import { asc, desc, gt } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { powerEvents } from "@/lib/db/schema";
import { startPowerMonitor, type PowerMonitor } from "@/lib/power/monitor/power-monitor";
import { listPowerTargets } from "@/lib/power/operations/power-targets";
import { setPowerMode } from "@/lib/power/operations/set-power-mode";
import { updatePowerSettings } from "@/lib/power/operations/update-power-settings";
import { waitUntil, type LabNode } from "@/lab";
import { startLabUps, type LabUps } from "@/lab/ups/lab-ups";
import { startWebhookReceiver, type WebhookReceiver } from "@/lab/webhook-receiver/receiver";
import { registerTestDatabase } from "@/test/db";
import {
  addUps,
  ADMIN,
  nutSourceOf,
  onboardedLabNode,
  powerTestPipelines,
  protectHost,
} from "@/test/fixtures/power";
import { startWorker, type WorkerHandle } from "@/worker/runner";
import { FORMATS } from "./formats";
import { kindTitle } from "./message";
import { createTarget } from "./targets";

/**
 * A real outage in the lab — the lab UPS's plug pulled to low battery, the monitor's trigger, an
 * armed shutdown of a lab node, mains back — with one target per format on the lab receiver:
 * every event reaches every format, each target in the order the events happened.
 */

const database = registerTestDatabase(6);
let worker: WorkerHandle;
let monitor: PowerMonitor;
let ups: LabUps;
let node: LabNode;
let receiver: WebhookReceiver;
let firstEventId = 0;

beforeAll(async () => {
  const { db, url } = database;
  receiver = await startWebhookReceiver();
  worker = await startWorker({
    connectionString: url,
    pipelines: powerTestPipelines,
    concurrency: 2,
    pollIntervalMs: 200,
    periodicChecks: false,
    log: () => {},
    notify: { retryBaseMs: 200, timeoutMs: 2000 },
  });
  ups = await startLabUps({ name: "drill-ups", snmp: false });
  const upsId = await addUps(db, "drill-ups", nutSourceOf(ups));
  const onboarded = await onboardedLabNode(db, "pve-drill");
  node = onboarded.node;
  await protectHost(db, onboarded.hostId, { feeds: [upsId] });
  await updatePowerSettings(
    db,
    {
      triggers: { onBatteryForSeconds: 600, latchReleaseAfterStableMainsSeconds: 1 },
      shutdown: { callTimeoutSeconds: 3, targetDownSeconds: 20 },
    },
    ADMIN,
  );
  const targetIds = (await listPowerTargets(db)).map((t) => t.id);
  await setPowerMode(db, { mode: "armed", confirmedTargetIds: targetIds }, ADMIN);
  for (const format of FORMATS) {
    await createTarget(
      db,
      {
        name: `drill-${format}`,
        format,
        url: receiver.url(`/${format}`),
        minSeverity: "info",
        template: format === "template" ? '{"kind": "{{kind}}", "text": "{{text}}"}' : undefined,
      },
      ADMIN,
    );
  }
  // Only what the outage records counts: the set-up's configuration events came before.
  const [latest] = await db
    .select({ id: powerEvents.id })
    .from(powerEvents)
    .orderBy(desc(powerEvents.id))
    .limit(1);
  firstEventId = latest?.id ?? 0;
  monitor = await startPowerMonitor({
    connectionString: url,
    supervisorIntervalMs: 500,
    log: () => {},
  });
}, 180_000);

afterAll(async () => {
  await monitor?.stop();
  await worker?.stop();
  await Promise.all([ups?.stop(), node?.stop(), receiver?.close()]);
});

const drillEvents = () =>
  database.db
    .select()
    .from(powerEvents)
    .where(gt(powerEvents.id, firstEventId))
    .orderBy(asc(powerEvents.id));

/** What a format's body says the event was, as its kind (json, template) or its title (the rest). */
function kindOf(format: string, body: string): string {
  switch (format) {
    case "json":
    case "template":
      return (JSON.parse(body) as { kind: string }).kind;
    case "text":
      return body.split("\n")[2]!.split(" at ")[0]!;
    case "slack":
      return (
        JSON.parse(body) as { blocks: { elements?: { text: string }[] }[] }
      ).blocks[2]!.elements![0]!.text.split(" · ")[1]!;
    case "discord":
      return (JSON.parse(body) as { embeds: { fields: { value: string }[] }[] }).embeds[0]!
        .fields[1]!.value;
    case "teams":
      return (
        JSON.parse(body) as {
          attachments: { content: { body: { facts?: { value: string }[] }[] } }[];
        }
      ).attachments[0]!.content.body[2]!.facts![1]!.value;
    default:
      return body;
  }
}

describe("a lab outage drill", () => {
  it("delivers every power event to every format, each target in the events' order", async () => {
    ups.control.jumpToLowBattery();
    await waitUntil(async () => (await drillEvents()).some((e) => e.kind === "target.down"), {
      timeoutMs: 60_000,
      what: "the node to go down",
    });
    ups.control.restore();
    await waitUntil(async () => (await drillEvents()).some((e) => e.kind === "latch.released"), {
      timeoutMs: 30_000,
      what: "mains back and the latch released",
    });
    const events = await drillEvents();
    const kinds = events.map((e) => e.kind);
    // The outage as the console lived it, in this order (other events may sit between).
    const story = [
      "ups.on_battery",
      "trigger.fired",
      "shutdown.sent",
      "target.down",
      "ups.mains_back",
      "latch.released",
    ];
    expect(kinds.filter((k) => story.includes(k))).toEqual(story);

    for (const format of FORMATS) {
      const got = await receiver.waitFor(events.length, { path: `/${format}`, timeoutMs: 30_000 });
      const received = got.map((r) =>
        format === "ntfy" ? r.headers.tags!.split(",")[1]! : kindOf(format, r.body),
      );
      expect(received, format).toEqual(kinds);
    }
    // The ntfy title names the event in words.
    expect(receiver.received("/ntfy")[0]!.headers.title).toContain(kindTitle(kinds[0]!));
  });
});
