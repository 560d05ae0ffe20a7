import { and, asc, eq, sql } from "drizzle-orm";

import type { Database } from "@/lib/db/client";
import { consoleKeyRotationHosts, consoleKeyRotations } from "@/lib/db/schema";
import { commandHeader, commandResult } from "@/lib/logs/text";
import { notifyLive } from "@/lib/live/notify";
import {
  advance,
  definePipeline,
  fail,
  poll,
  type RunLogSink,
  type RunRef,
  type Step,
} from "@/lib/pipeline/step";
import type { ExecResult, SshSession } from "@/lib/ssh";

import { retireUnusedKeys } from "./keys-in-use";
import { switchHostToKey, type SwitchIo } from "./switch-host";

export const ROTATE_CONSOLE_KEY = "rotate-console-key";

export type RotationServices = {
  db: Database;
  io: SwitchIo;
};

type RotationRow = typeof consoleKeyRotations.$inferSelect;

async function rotationOf(db: Database, rotationId: unknown): Promise<RotationRow | null> {
  if (typeof rotationId !== "string") return null;
  const [row] = await db
    .select()
    .from(consoleKeyRotations)
    .where(eq(consoleKeyRotations.id, rotationId));
  return row ?? null;
}

/**
 * One host per visit, in name order: a worker that dies mid-rotation resumes at the host it was
 * on (whose outcome is still pending), and the phase line shows where the rotation stands.
 */
const switchHosts: Step<RotationServices> = {
  name: "SwitchHostsToNewKey",
  // Hosts are visited one by one; a large fleet with slow hosts takes a while.
  maxDuration: () => 24 * 3600,
  async visit(ctx) {
    const { db, io } = ctx.services;
    const rotation = await rotationOf(db, ctx.context.get("rotationId"));
    if (!rotation) return fail("This run has no key rotation record; start a new rotation.");
    const rows = await db
      .select()
      .from(consoleKeyRotationHosts)
      .where(eq(consoleKeyRotationHosts.rotationId, rotation.id))
      .orderBy(asc(consoleKeyRotationHosts.hostName));
    const next = rows.find((row) => row.outcome === "pending");
    if (!next) return advance(`${rows.length} host(s) visited`);
    const position = rows.indexOf(next) + 1;
    ctx.log(`${next.hostName}: switching to the new key (${position} of ${rows.length})`);
    const result = await switchHostToKey(db, next.hostId, rotation.toKeyId, io);
    ctx.log(`${next.hostName}: ${result.outcome.replaceAll("_", " ")} — ${result.detail}`);
    await db.transaction(async (tx) => {
      await tx
        .update(consoleKeyRotationHosts)
        .set({ outcome: result.outcome, detail: result.detail, updatedAt: new Date() })
        .where(
          and(
            eq(consoleKeyRotationHosts.rotationId, rotation.id),
            eq(consoleKeyRotationHosts.hostId, next.hostId),
          ),
        );
      await notifyLive(tx, { type: "run", runId: ctx.runId, hostId: null });
    });
    const done = position;
    return poll(0, `${done} of ${rows.length} hosts done`, `${next.hostName}: ${result.outcome}`);
  },
};

/** Marks retiring keys no host uses as retired, and the rotation as finished. */
const retireOldKeys: Step<RotationServices> = {
  name: "RetireUnusedKeys",
  maxDuration: () => 300,
  async visit(ctx) {
    const { db } = ctx.services;
    const rotation = await rotationOf(db, ctx.context.get("rotationId"));
    if (!rotation) return fail("This run has no key rotation record; start a new rotation.");
    const retired = await retireUnusedKeys(db);
    const outcomes = await db
      .select({ outcome: consoleKeyRotationHosts.outcome, n: sql<number>`count(*)::int` })
      .from(consoleKeyRotationHosts)
      .where(eq(consoleKeyRotationHosts.rotationId, rotation.id))
      .groupBy(consoleKeyRotationHosts.outcome);
    await db
      .update(consoleKeyRotations)
      .set({ finishedAt: new Date() })
      .where(eq(consoleKeyRotations.id, rotation.id));
    const summary = outcomes.map((o) => `${o.n} ${o.outcome.replaceAll("_", " ")}`).join(", ");
    ctx.log(
      `${summary || "no hosts on the console's key"}; ${retired} old key(s) retired` +
        (retired === 0 ? " (a host still logs in with an old key)" : ""),
    );
    return advance(summary);
  },
};

export type RotationPipelineOptions = {
  /** Test hook (see SwitchIo.afterProven): a crash right after a host was moved. */
  afterProven?: (hostId: string) => Promise<void>;
};

export function createRotateConsoleKeyPipeline(options: RotationPipelineOptions = {}) {
  return definePipeline<RotationServices>({
    name: ROTATE_CONSOLE_KEY,
    steps: [switchHosts, retireOldKeys],
    services: (run, db) => ({
      services: { db, io: loggedIo(run, options) },
      dispose: async () => {},
    }),
  });
}

export const rotateConsoleKeyPipeline = createRotateConsoleKeyPipeline();

/** Commands go into the run's log like the onboarding's: header, output, exit code. */
function loggedIo(run: RunRef & RunLogSink, options: RotationPipelineOptions): SwitchIo {
  return {
    log: (line) => run.log(line),
    async exec(session: SshSession, command: string): Promise<ExecResult> {
      const started = Date.now();
      run.log(commandHeader(run.step, command, new Date(started)), "command");
      try {
        const result = await session.exec(command, { timeoutMs: 30_000 });
        for (const text of [result.stdout, result.stderr]) {
          for (const line of text.split("\n").filter((l) => l !== "")) run.log(line, "output");
        }
        run.log(commandResult(result.code, result.signal, result.durationMs), "result");
        return result;
      } catch (error) {
        run.log(
          `◀ failed: ${error instanceof Error ? error.message.split("\n")[0] : String(error)}`,
          "result",
        );
        throw error;
      }
    },
    ...(options.afterProven ? { afterProven: options.afterProven } : {}),
  };
}
