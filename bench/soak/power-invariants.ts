import pg from "pg";
import type { LabNode } from "@/lab";
import type { Verdict } from "./invariants";
import type { PowerFleet } from "./power-fleet";
import { judgePower, type ShutdownRequest } from "./power-judgement";
import type { PowerEpisode } from "./power-load";
import type { SoakContext } from "./soak-context";

/** Every `POST /nodes/{node}/status command=shutdown` that reached a lab node (its API's log). */
function shutdownRequests(node: LabNode): ShutdownRequest[] {
  const path = `/api2/json/nodes/${node.name}/status`;
  return node.api.requests
    .filter((r) => r.method === "POST" && r.path === path && r.body.command === "shutdown")
    .map((r) => ({ node: node.name, at: r.at.getTime() }));
}

/**
 * The power invariants (bench/soak/power-judgement.ts) over the lab's request logs (every
 * node's, the soak's onboarding fleet too), the console's mode history, its power_shutdown_calls
 * and power-shutdown runs, and the episodes the power load went through.
 */
export async function powerVerdicts(
  ctx: SoakContext,
  fleet: PowerFleet,
  episodes: readonly PowerEpisode[],
  faultsInjected: number,
): Promise<Verdict[]> {
  const client = new pg.Client({ connectionString: ctx.console.databaseUrl });
  client.on("error", () => {});
  await client.connect();
  try {
    const modes = await client.query<{ at: Date; kind: string }>(
      `select at, kind from power_events where kind in ('mode.armed', 'mode.disarmed') order by id`,
    );
    const calls = await client.query<{ target_id: string; state: string; run_created_at: Date }>(
      `select c.target_id, c.state::text, r.created_at as run_created_at
       from power_shutdown_calls c join runs r on r.id = c.run_id order by c.id`,
    );
    const runs = await client.query<{
      id: string;
      created_at: Date;
      status: string;
      failure_reason: string | null;
      latched_at: string | null;
      replaces: string[] | null;
    }>(
      `select id, created_at, status::text, failure_reason,
              context->'input'->'trigger'->>'latchedAt' as latched_at,
              context->'input'->'replaces' as replaces
       from runs where pipeline = 'power-shutdown'`,
    );
    const nodes = [...ctx.nodes.map((n) => n.node), ...fleet.targets.map((t) => t.node)];
    return judgePower(
      {
        modes: modes.rows.map((m) => ({ at: m.at.getTime(), kind: m.kind })),
        calls: calls.rows.map((c) => ({
          targetId: c.target_id,
          state: c.state,
          runCreatedAt: c.run_created_at.getTime(),
        })),
        runs: runs.rows.map((r) => ({
          id: r.id,
          createdAt: r.created_at.getTime(),
          status: r.status,
          failureReason: r.failure_reason,
          latchedAt: r.latched_at,
          replaces: r.replaces ?? [],
        })),
        requests: nodes.flatMap(shutdownRequests),
        targets: fleet.targets.map((t) => ({ id: t.id, node: t.node.name })),
        episodes,
        faultsInjected,
      },
      (at) => ctx.since(at),
    );
  } finally {
    await client.end().catch(() => {});
  }
}
