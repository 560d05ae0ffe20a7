import { desc, isNotNull } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import { powerSelfTests, upsDevices } from "@/lib/db/schema";
import { notifyLive } from "@/lib/live/notify";
import { recordPowerEvents } from "../records/power-events";
import { planPreview } from "../shutdown-pipeline/plan-preview";
import { loadTargets, type TargetRecord } from "../targets/load-targets";
import { checkClusters } from "./check-clusters";
import { checkPbsTarget } from "./check-pbs-target";
import { checkPowerControllers } from "./check-power-controllers";
import { checkPveTarget } from "./check-pve-target";
import { checkUps } from "./check-ups";
import { checkWebhooks } from "./check-webhooks";
import { outageInProgress } from "./outage";
import { overallVerdict, type SelfTestCheck } from "./verdict";

export type SelfTestOccasion = (typeof powerSelfTests.occasion.enumValues)[number];
export type StoredSelfTest = typeof powerSelfTests.$inferSelect;

export type RunSelfTestOptions = {
  occasion: SelfTestOccasion;
  requestedBy?: string | null;
  /** Deadline of each request to a target or UPS (default 5 s). */
  timeoutMs?: number;
};

/** Targets asked at once: each is a handful of API requests under the deadline. */
const PARALLEL_TARGETS = 4;

/**
 * Runs every check of the shutdown path now and stores the result — unless a power outage is in
 * progress, then it stores only why it was skipped. A failed self-test is a `self-test.failed`
 * power event (and so a notification) when its failures differ from the last stored ones, so
 * an unchanged problem is not announced again every hour.
 */
export async function runSelfTest(
  db: Database,
  options: RunSelfTestOptions,
): Promise<StoredSelfTest> {
  const startedAt = new Date();
  const requestedBy = options.requestedBy ?? null;
  const outage = await outageInProgress(db);
  if (outage !== null) {
    return store(db, {
      occasion: options.occasion,
      requestedBy,
      startedAt,
      verdict: null,
      skippedReason: outage,
      checks: [],
    });
  }
  const checks = await collectChecks(db, options.timeoutMs ?? 5000, {
    // A real test message per webhook only on the button (see check-webhooks.ts).
    webhooks: options.occasion === "button",
  });
  return store(db, {
    occasion: options.occasion,
    requestedBy,
    startedAt,
    verdict: overallVerdict(checks),
    skippedReason: null,
    checks,
  });
}

async function collectChecks(
  db: Database,
  timeoutMs: number,
  include: { webhooks: boolean },
): Promise<SelfTestCheck[]> {
  const [targets, devices, plan] = await Promise.all([
    loadTargets(db),
    db.select().from(upsDevices).orderBy(upsDevices.name),
    planPreview(db),
  ]);
  const enabled = targets.filter((t) => t.enabled);
  const perTarget = await inParallel(enabled, PARALLEL_TARGETS, (target) =>
    checkTarget(db, target, timeoutMs),
  );
  const perUps = await Promise.all(devices.map((device) => checkUps(db, device, { timeoutMs })));
  const perCluster = await checkClusters(db, targets, { timeoutMs });
  const perWebhook = include.webhooks ? await checkWebhooks(db, { timeoutMs }) : [];

  const checks: SelfTestCheck[] = [...perTarget.flat(), ...perUps, ...perCluster, ...perWebhook];
  checks.push(...(await checkPowerControllers(db, { timeoutMs })));
  if (enabled.length === 0) {
    checks.push({
      key: "protection:none",
      title: "targets: something is protected",
      subject: "targets",
      verdict: "warning",
      reason: "No target is protected: a power failure shuts nothing down.",
      next: "Add the hosts to protect on the Targets page.",
    });
  }
  for (const target of plan.unprotected) {
    checks.push({
      key: `protection:${target.id}`,
      title: `${target.name}: a UPS can bring it down`,
      subject: target.name,
      verdict: "warning",
      reason: `${target.name} is not protected: ${target.why}.`,
      next: "Give it its feeds and turn it on on the Targets page, or remove it.",
    });
  }
  for (const group of plan.groups) {
    if (group.verdict === "nothing") continue;
    const title = `${group.ups.name}: the shutdown fits in the battery's runtime`;
    const base = { key: `budget:${group.ups.id}`, title, subject: group.ups.name };
    checks.push(
      group.verdict === "ok"
        ? { ...base, verdict: "ok", reason: `${group.summary}.`, next: null }
        : group.verdict === "short"
          ? {
              ...base,
              verdict: "failed",
              reason: `${group.summary}: the battery runs out ${Math.ceil(group.shortfallSeconds / 60)} min before every target is down.`,
              next: "Fire the trigger earlier (a higher runtime or charge threshold), shorten the deadlines or the guests' timeout (Triggers and deadlines), raise the guests' parallelism, or shut fewer targets down.",
            }
          : {
              ...base,
              verdict: "could-not-check",
              reason: `${group.summary}: the runtime left when the trigger fires cannot be told.`,
              next: "Set a runtime or charge trigger (Triggers and deadlines), and make sure a worker watches the UPS and that it reports battery.runtime and battery.charge.",
            },
    );
  }
  return checks;
}

function checkTarget(
  db: Database,
  target: TargetRecord,
  timeoutMs: number,
): Promise<SelfTestCheck[]> {
  const { endpoint } = target;
  if (endpoint === null) {
    return Promise.resolve([
      {
        key: `token:${target.id}`,
        title: `${target.name}: the API answers with the console's token`,
        subject: target.name,
        verdict: "failed",
        reason: `It cannot be called: ${target.problem ?? "no address or token"}.`,
        next: "Finish its onboarding or correct the target, then run the self-test again.",
      },
    ]);
  }
  return endpoint.kind === "pve-node"
    ? checkPveTarget(db, target, endpoint, { timeoutMs })
    : checkPbsTarget(db, target, endpoint, { timeoutMs });
}

async function inParallel<T, R>(
  items: readonly T[],
  limit: number,
  each: (item: T) => Promise<R>,
): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const lane = async () => {
    while (next < items.length) {
      const at = next++;
      results[at] = await each(items[at]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
  return results;
}

type NewSelfTest = Omit<typeof powerSelfTests.$inferInsert, "id" | "finishedAt">;

async function store(db: Database, row: NewSelfTest): Promise<StoredSelfTest> {
  return db.transaction(async (tx) => {
    const [previous] = await tx
      .select({ verdict: powerSelfTests.verdict, checks: powerSelfTests.checks })
      .from(powerSelfTests)
      .where(isNotNull(powerSelfTests.verdict))
      .orderBy(desc(powerSelfTests.finishedAt))
      .limit(1);
    const [stored] = await tx.insert(powerSelfTests).values(row).returning();
    if (row.verdict === "failed") {
      const failed = (row.checks ?? []).filter((c) => c.verdict === "failed");
      const before = new Set(
        previous?.verdict === "failed"
          ? previous.checks.filter((c) => c.verdict === "failed").map((c) => `${c.key} ${c.reason}`)
          : [],
      );
      if (
        failed.some((c) => !before.has(`${c.key} ${c.reason}`)) ||
        failed.length !== before.size
      ) {
        await recordPowerEvents(tx, [
          {
            severity: "warning",
            kind: "self-test.failed",
            message: `self-test failed: ${failed.map((c) => `${c.title} — ${c.reason}`).join(" | ")}`,
            data: {
              selfTestId: stored!.id,
              failed: failed.map(({ key, title, reason, next }) => ({ key, title, reason, next })),
            },
          },
        ]);
      }
    }
    // The dashboard's card re-reads it (every power query refreshes on this message).
    await notifyLive(tx, { type: "power", upsId: null, eventId: null });
    return stored!;
  });
}
