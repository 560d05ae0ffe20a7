import { randomUUID } from "node:crypto";
import { setTimeout as delay } from "node:timers/promises";
import { formatDuration } from "@/lib/logs/text";
import type { PowerEventInput } from "@/lib/power/records/power-events";
import { retryDelayMs } from "@/lib/power/shutdown/call-attempts";
import {
  buildPlan,
  type PlannedTarget,
  type ShutdownPlan,
} from "@/lib/power/shutdown/shutdown-plan";
import { dueTargets, mainsBackFor } from "@/lib/power/targets/due-targets";
import {
  probeTarget,
  sendShutdownWithSecret,
  tokenCredentialOf,
} from "@/lib/power/targets/shutdown-call";
import type { Latch } from "@/lib/power/triggers/state";
import type { StandbyPlan } from "./standby-plan";

/**
 * The shutdown without the database: what the power monitor does when a trigger demands a
 * shutdown and its transaction cannot be written (the database is unreachable, or the trigger
 * path failed in another way). It acts on the standby plan it holds in memory (./standby-plan.ts)
 * with the same safeguards as a run — armed only, mains back before the first call cancels,
 * mains back and held spares the stages not begun, a target is done when it is seen down and
 * a failed call is sent again with backoff until then — and keeps a journal of every attempt,
 * event and log line, which ./record-offline-shutdown.ts writes as one power-shutdown run once
 * the database answers again.
 *
 * What it cannot do without the database and the engine: a cluster's cluster-wide preparation
 * (HA disarm, stopping every guest, Ceph flags). Its nodes are shut down by their own APIs in
 * the planned order, their own guests stopping with them, and a critical event says so — the
 * same fallback as a cluster whose members do not answer (lib/power/cluster-sequence).
 *
 * Every duration here is monotonic (performance.now); wall-clock times are only written down.
 */

/** Two silent probes this far apart before a target counts as down. */
const SILENT_CONFIRM_MS = 500;
const PROBE_TIMEOUT_MS = 2000;
const PROBE_INTERVAL_MS = 200;

export type OfflineAttempt = {
  targetId: string;
  dueSince: Date;
  attempt: number;
  state: "sent" | "failed";
  request: string;
  detail: string;
  startedAt: Date;
  finishedAt: Date;
  seenDownAt: Date | null;
};

export type OfflineRecord = {
  /** The run's id once recorded; chosen now so that recording twice records once. */
  runId: string;
  ups: { id: string; name: string };
  latch: Pick<Latch, "trigger" | "reason" | "at">;
  why: string;
  plan: ShutdownPlan;
  startedAt: Date;
  finishedAt: Date | null;
  outcome: "running" | "succeeded" | "failed" | "cancelled";
  failureReason: string | null;
  attempts: OfflineAttempt[];
  events: Array<PowerEventInput & { at: Date }>;
  log: Array<{ at: Date; text: string }>;
  /** Targets left out: mains back before their turn. */
  spared: string[];
};

export type OfflineShutdownOptions = {
  standby: StandbyPlan;
  ups: { id: string; name: string };
  latch: Pick<Latch, "trigger" | "reason" | "at">;
  /** Why the database path could not act ("the database is unreachable: …"). */
  why: string;
  /** Latched UPSes as this process knows them now (this one included), by id. */
  latchedAt: () => ReadonlyMap<string, Date>;
  /** UPSes this process has no recent reliable reading of (count as failing for `all`). */
  unknownFeeds: () => ReadonlySet<string>;
  /** UPS id → on mains by a reliable reading now / held on mains for its confirmation. */
  onMains: () => ReadonlyMap<string, boolean>;
  mainsHeld: () => ReadonlyMap<string, boolean>;
  log: (line: string) => void;
};

/** Starts at once; `done` settles when every target is seen down, given up on, or spared. */
export class OfflineShutdown {
  readonly record: OfflineRecord;
  readonly done: Promise<void>;
  private stopped = false;
  private readonly controller = new AbortController();

  constructor(private readonly options: OfflineShutdownOptions) {
    const { standby, ups, latch } = options;
    const fed = standby.records.filter((r) => r.feeds.some((f) => f.upsId === ups.id));
    const due = dueTargets(
      fed.map((r) => ({ ...r, feeds: r.feeds.map((f) => f.upsId) })),
      options.latchedAt(),
      options.unknownFeeds(),
    );
    const plan = buildPlan(
      fed,
      new Map(due.map((d) => [d.targetId, d.dueSince.toISOString()])),
      standby.settings,
      new Date(),
      standby.clusterGroups,
    );
    this.record = {
      runId: randomUUID(),
      ups,
      latch,
      why: options.why,
      plan,
      startedAt: new Date(),
      finishedAt: null,
      outcome: "running",
      failureReason: null,
      attempts: [],
      events: [],
      log: [],
      spared: [],
    };
    this.done = this.run().catch((error: unknown) => {
      this.finish("failed", `the shutdown without the database broke off: ${String(error)}`);
    });
  }

  /** Stops sending (the worker is stopping); what happened so far stays in the journal. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.controller.abort();
    await this.done;
  }

  private say(text: string): void {
    this.record.log.push({ at: new Date(), text });
    this.options.log(`UPS ${this.options.ups.name}: ${text}`);
  }

  private event(event: Omit<PowerEventInput, "upsId" | "runId">): void {
    this.record.events.push({
      ...event,
      at: new Date(),
      upsId: this.options.ups.id,
      runId: this.record.runId,
    });
  }

  private finish(outcome: OfflineRecord["outcome"], failureReason: string | null): void {
    if (this.record.finishedAt) return;
    this.record.outcome = outcome;
    this.record.failureReason = failureReason;
    this.record.finishedAt = new Date();
  }

  private async run(): Promise<void> {
    const { plan } = this.record;
    const { standby } = this.options;
    this.say(
      `${this.options.why}: acting on the plan held in memory (version ${standby.version.slice(0, 12)}, read ${standby.loadedAt.toISOString()}); recorded once the database answers again`,
    );
    this.event({
      severity: "critical",
      kind: "shutdown.offline",
      message: `${this.options.ups.name}: trigger fired (${this.options.latch.reason}) while ${this.options.why}: the console shuts ${plan.targets.map((t) => t.name).join(", ") || "nothing"} down from the plan it holds in memory`,
      data: { why: this.options.why, version: standby.version },
    });
    if (plan.targets.length === 0) return this.finish("succeeded", null);
    if (standby.settings.mode !== "armed") {
      for (const target of plan.targets) {
        this.say(
          `${target.name}: would ${target.request?.line ?? "be called"} (dry-run: nothing sent)`,
        );
      }
      return this.finish("succeeded", null);
    }
    // Mains back before anything was sent: nothing is sent.
    const back = plan.targets.filter((t) => this.feedsSay(t, this.options.onMains()));
    if (back.length === plan.targets.length) {
      this.say("mains back before anything was sent: shutdown cancelled");
      this.event({
        severity: "warning",
        kind: "shutdown.cancelled",
        message: `${this.options.ups.name}: mains back before anything was sent: shutdown cancelled (${plan.targets.map((t) => t.name).join(", ")})`,
      });
      return this.finish("cancelled", "mains back before anything was sent: shutdown cancelled");
    }
    for (const cluster of plan.clusters) {
      this.event({
        severity: "critical",
        kind: "cluster.fell_back",
        message: `${cluster.name}: the database is unreachable, so the cluster-wide preparation (HA disarm, stopping every guest, Ceph flags) cannot run: each node is shut down by its own API in the planned order (${cluster.nodes.map((n) => n.name).join(", ")}), its own guests stopping with it`,
        data: { clusterId: cluster.clusterId, why: this.options.why },
      });
    }
    const watches: Array<[PlannedTarget, Promise<"down" | "still-up" | "not-sent">]> = [];
    const standalone = plan.targets.filter((t) => !t.cluster && !t.afterClusters);
    const groups = [...new Set(standalone.map((t) => t.group))];
    let begun = false;
    for (const group of groups) {
      const batch = standalone.filter((t) => t.group === group && !this.left(t));
      if (begun && this.spare(plan.targets.filter((t) => !this.begun(t)))) continue;
      begun = true;
      watches.push(
        ...batch.map(
          (t) =>
            [t, this.untilDown(t)] as [PlannedTarget, Promise<"down" | "still-up" | "not-sent">],
        ),
      );
      // The next group follows once this one's calls are answered (or their deadline passed).
      await Promise.all(batch.map((t) => this.firstAnswer(t)));
    }
    const sequence = plan.targets.filter((t) => Boolean(t.cluster) || t.afterClusters);
    for (const target of sequence) {
      if (this.stopped) break;
      if (this.left(target)) continue;
      if (begun && this.spare(sequence.filter((t) => !this.begun(t)))) break;
      begun = true;
      // One after another: the next node waits until this one is down or its time is over.
      await this.untilDown(target);
    }
    const outcomes = await Promise.all(watches.map(([, watch]) => watch));
    const calledSequence = sequence.filter((t) => this.begun(t));
    const stillUp = [
      ...watches.filter((_, i) => outcomes[i] !== "down").map(([t]) => t),
      ...calledSequence.filter((t) => !this.seenDown(t)),
    ];
    if (this.stopped) return this.finish("failed", "the worker stopped while it shut targets down");
    this.finish(
      stillUp.length === 0 ? "succeeded" : "failed",
      stillUp.length === 0
        ? null
        : `still answering after their time to go down: ${stillUp.map((t) => t.name).join(", ")}`,
    );
  }

  private readonly state = new Map<
    string,
    { begun: boolean; firstAnswer: Promise<void>; downAt: Date | null }
  >();

  private begun(t: PlannedTarget): boolean {
    return this.state.get(t.id)?.begun === true;
  }
  private seenDown(t: PlannedTarget): boolean {
    return Boolean(this.state.get(t.id)?.downAt);
  }
  private left(t: PlannedTarget): boolean {
    return this.record.spared.includes(t.id);
  }
  private firstAnswer(t: PlannedTarget): Promise<void> {
    return this.state.get(t.id)?.firstAnswer ?? Promise.resolve();
  }

  private feedsSay(t: PlannedTarget, feeds: ReadonlyMap<string, boolean>): boolean {
    return mainsBackFor({ feedPolicy: t.feedPolicy, feeds: t.feeds.map((f) => f.upsId) }, feeds);
  }

  /** Mains back and held: the targets not begun are spared. True when any was. */
  private spare(notBegun: PlannedTarget[]): boolean {
    const held = this.options.mainsHeld();
    const spared = notBegun.filter((t) => !this.left(t) && this.feedsSay(t, held));
    if (spared.length === 0) return false;
    this.record.spared.push(...spared.map((t) => t.id));
    const line = `mains back and held on their feeds before their stage began: ${spared.map((t) => t.name).join(", ")} spared — not shut down; what was already sent goes on`;
    this.say(line);
    this.event({
      severity: "warning",
      kind: "shutdown.spared",
      message: line,
      data: { targets: spared.map((t) => t.id), names: spared.map((t) => t.name) },
    });
    return true;
  }

  /**
   * Calls the target and watches it until it is seen down (two silent probes) or its time to go
   * down is over, sending the call again with backoff while none was accepted.
   */
  private untilDown(target: PlannedTarget): Promise<"down" | "still-up" | "not-sent"> {
    const secret = target.endpoint
      ? this.options.standby.secrets.get(tokenCredentialOf(target.endpoint))
      : undefined;
    if (!target.request || !target.endpoint || secret === undefined) {
      const why = target.problem ?? "its token's secret could not be read";
      this.say(`${target.name}: not sent: ${why}`);
      this.event({
        severity: "critical",
        kind: "shutdown.failed",
        message: `${target.name}: not sent: ${why}`,
        targetId: target.id,
      });
      this.state.set(target.id, { begun: true, firstAnswer: Promise.resolve(), downAt: null });
      return Promise.resolve("not-sent");
    }
    const endpoint = target.endpoint;
    let signalFirst: () => void = () => {};
    const entry = {
      begun: true,
      firstAnswer: new Promise<void>((resolve) => (signalFirst = resolve)),
      downAt: null as Date | null,
    };
    this.state.set(target.id, entry);
    const limitMs = this.record.plan.targetDownSeconds * 1000;
    const watch = async (): Promise<"down" | "still-up"> => {
      const first = performance.now();
      let accepted = false;
      let failedInARow = 0;
      let lastFinished = first;
      let attempts = 0;
      const attempt = async () => {
        attempts++;
        const startedAt = new Date();
        const again = attempts > 1 ? ` (attempt ${attempts})` : "";
        this.say(
          `${target.name}: ${target.request!.line}${again} (deadline ${target.deadlineSeconds} s)`,
        );
        const began = performance.now();
        let state: OfflineAttempt["state"] = "sent";
        let detail: string;
        try {
          await sendShutdownWithSecret(endpoint, secret, {
            timeoutMs: target.deadlineSeconds * 1000,
          });
          detail = `accepted in ${Math.round(performance.now() - began)} ms${again}`;
          accepted = true;
          failedInARow = 0;
        } catch (error) {
          state = "failed";
          detail = error instanceof Error ? error.message : String(error);
          failedInARow++;
        }
        lastFinished = performance.now();
        this.record.attempts.push({
          targetId: target.id,
          dueSince: new Date(target.dueSince),
          attempt: attempts,
          state,
          request: target.request!.line,
          detail,
          startedAt,
          finishedAt: new Date(),
          seenDownAt: null,
        });
        this.say(`${target.name}: ${state === "sent" ? detail : `FAILED${again}: ${detail}`}`);
        this.event({
          severity: "critical",
          kind: state === "sent" ? "shutdown.sent" : "shutdown.failed",
          message:
            state === "sent"
              ? `${target.name}: shutdown sent (${target.request!.line}): ${detail}`
              : `${target.name}: shutdown FAILED (${target.request!.line}): ${detail}`,
          targetId: target.id,
          data: { request: target.request!.line, outcome: state, detail, attempt: attempts },
        });
      };
      await attempt();
      signalFirst();
      let silentSince: number | null = null;
      for (;;) {
        if (this.stopped) return "still-up";
        const probe = await probeTarget(endpoint, PROBE_TIMEOUT_MS);
        const now = performance.now();
        if (!probe.answers) {
          silentSince ??= now;
          if (now - silentSince >= SILENT_CONFIRM_MS) {
            entry.downAt = new Date(Date.now() - (now - silentSince));
            for (const a of this.record.attempts.filter((a) => a.targetId === target.id)) {
              a.seenDownAt = entry.downAt;
            }
            const line = `${target.name}: stopped answering at ${entry.downAt.toISOString()} (${formatDuration(now - first)} after its first call): ${probe.why}`;
            this.say(line);
            this.event({
              severity: "info",
              kind: "target.down",
              message: line,
              targetId: target.id,
            });
            return "down";
          }
        } else {
          silentSince = null;
          if (now - first >= limitMs) {
            const line = `${target.name}: still answering ${this.record.plan.targetDownSeconds} s after its first shutdown call${accepted ? "" : " (no call of it was accepted)"}`;
            this.say(line);
            this.event({
              severity: "critical",
              kind: "target.still_up",
              message: line,
              targetId: target.id,
            });
            return "still-up";
          }
          if (!accepted && now - lastFinished >= retryDelayMs(failedInARow)) await attempt();
        }
        await delay(PROBE_INTERVAL_MS, undefined, { signal: this.controller.signal }).catch(
          () => {},
        );
      }
    };
    return watch();
  }
}
