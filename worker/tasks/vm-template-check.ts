import { eq } from "drizzle-orm";
import type { Task } from "graphile-worker";
import { z } from "zod";
import {
  requiredTemplateVmids,
  type RequiredTemplates,
} from "@/lib/catalog/required-template-vmids";
import type { Database } from "@/lib/db/client";
import { hosts } from "@/lib/db/schema";
import { activeHosts } from "@/lib/hosts/active-hosts";
import { proxmoxClientForHost } from "@/lib/host-access/proxmox-client";
import { recordTemplateFinding } from "@/lib/notify/template-check-events";
import { notifyLive } from "@/lib/live/notify";
import {
  COULD_NOT_CHECK,
  findMissingTemplates,
  missingTemplatesText,
  TEMPLATES_MISSING,
} from "@/lib/steps/onboarding/verify-vm-template";

export const VM_TEMPLATE_CHECK_TASK = "vm-template-check";

/**
 * Every 15 minutes, at most one attempt (the next slot is the retry). graphile-worker's crontab
 * rather than a job that re-schedules itself: the schedule lives in the worker's code and
 * `known_crontabs`, so exactly one job per slot is created however many workers run, a worker
 * restart neither loses the chain nor doubles it, and a failed check cannot break the cycle.
 */
export const VM_TEMPLATE_CHECK_CRONTAB = `*/15 * * * * ${VM_TEMPLATE_CHECK_TASK} ?max=1`;

/** Hosts checked at once: each check is a handful of API requests with a 15 s timeout. */
const PARALLEL_HOSTS = 4;

type HostRecord = typeof hosts.$inferSelect;

/** Whatever the cron job carries (`_cron: { ts, backfilled }`); nothing in it is needed. */
const ZVmTemplateCheckPayload = z.object({}).loose();

export type TemplateCheckOutcome =
  | { kind: "ok" }
  | { kind: "missing"; vmids: number[]; text: string }
  | { kind: "unknown"; error: string };

/** What hosts.templateCheckFailure says: null when the host carries what the catalog requires. */
export function templateCheckFailure(outcome: TemplateCheckOutcome): string | null {
  switch (outcome.kind) {
    case "ok":
      return null;
    case "missing":
      return `${TEMPLATES_MISSING}: ${outcome.text}`;
    case "unknown":
      return `${COULD_NOT_CHECK}: ${outcome.error}`;
  }
}

/**
 * One host against the catalog, by `isTemplate` (through findMissingTemplates, the same code
 * VerifyVmTemplate uses). Any failure to get an answer — network, 5xx, a refused token, a
 * changed certificate, no token yet — is "could not check", never "missing".
 */
export async function checkHostTemplates(
  db: Database,
  host: HostRecord,
  required: RequiredTemplates,
): Promise<TemplateCheckOutcome> {
  if (!required.catalogPublished || required.vmids.length === 0) return { kind: "ok" };
  try {
    const client = await proxmoxClientForHost(db, host);
    const missing = await findMissingTemplates(client, required.vmids);
    return missing.length === 0
      ? { kind: "ok" }
      : {
          kind: "missing",
          vmids: missing.map((m) => m.vmid),
          text: missingTemplatesText(missing),
        };
  } catch (error) {
    return { kind: "unknown", error: error instanceof Error ? error.message : String(error) };
  }
}

/**
 * The pre-sale check: every active host against `requiredTemplateVmids()`; the result recorded
 * on the host (templateCheckFailure, templateCheckedAt) and announced to the UI, and a new
 * finding (templates missing, or back) recorded as the host's event and so notified.
 */
export async function runVmTemplateCheck(
  db: Database,
  now: () => Date = () => new Date(),
): Promise<Map<string, string | null>> {
  const required = await requiredTemplateVmids(db, now());
  const queue = await activeHosts(db);
  const results = new Map<string, string | null>();
  const worker = async () => {
    for (let host = queue.shift(); host; host = queue.shift()) {
      const outcome = await checkHostTemplates(db, host, required);
      const failure = templateCheckFailure(outcome);
      const hostId = host.id;
      await db.transaction(async (tx) => {
        await recordTemplateFinding(tx, hostId, outcome);
        await tx
          .update(hosts)
          .set({ templateCheckFailure: failure, templateCheckedAt: now() })
          .where(eq(hosts.id, hostId));
        await notifyLive(tx, { type: "host", hostId });
      });
      results.set(hostId, failure);
    }
  };
  await Promise.all(Array.from({ length: PARALLEL_HOSTS }, worker));
  return results;
}

export function createVmTemplateCheckTask(db: Database): Task {
  return async (payload, helpers) => {
    ZVmTemplateCheckPayload.parse(payload ?? {});
    const results = await runVmTemplateCheck(db);
    const flagged = [...results.values()].filter((failure) => failure !== null).length;
    helpers.logger.debug(`vm-template-check: ${results.size} active hosts, ${flagged} flagged`);
  };
}
