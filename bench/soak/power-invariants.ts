import pg from "pg";
import type { LabNode } from "@/lab";
import type { Verdict } from "./invariants";
import type { PowerFleet } from "./power-fleet";
import type { PowerEpisode } from "./power-load";
import type { SoakContext } from "./soak-context";

type Call = { target_id: string; state: string; due_since: Date; run_created_at: Date };
type ShutdownRequest = { node: string; at: number };

const list = (items: readonly string[], max = 5) =>
  items.slice(0, max).join("; ") + (items.length > max ? `; … ${items.length - max} more` : "");
const within = (at: number, from: number, to: number) => at >= from && at <= to;

/** Every `POST /nodes/{node}/status command=shutdown` that reached a lab node (its API's log). */
function shutdownRequests(node: LabNode): ShutdownRequest[] {
  const path = `/api2/json/nodes/${node.name}/status`;
  return node.api.requests
    .filter((r) => r.method === "POST" && r.path === path && r.body.command === "shutdown")
    .map((r) => ({ node: node.name, at: r.at.getTime() }));
}

/**
 * The power invariants, from the lab's request logs (every node's, the soak's fleet too),
 * the console's mode history (its `mode.armed` / `mode.disarmed` power events), its
 * power_shutdown_calls and power-shutdown runs, and the episodes the power load went through.
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
  let modes: { at: Date; kind: string }[];
  let calls: Call[];
  let runs: { id: string; created_at: Date; status: string }[];
  try {
    modes = (
      await client.query<{ at: Date; kind: string }>(
        `select at, kind from power_events where kind in ('mode.armed', 'mode.disarmed') order by id`,
      )
    ).rows;
    calls = (
      await client.query<Call>(
        `select c.target_id, c.state::text, c.due_since, r.created_at as run_created_at
         from power_shutdown_calls c join runs r on r.id = c.run_id order by c.id`,
      )
    ).rows;
    runs = (
      await client.query<{ id: string; created_at: Date; status: string }>(
        `select id, created_at, status::text from runs where pipeline = 'power-shutdown'`,
      )
    ).rows;
  } finally {
    await client.end().catch(() => {});
  }

  const armedAt = (at: number) => {
    let armed = false;
    for (const m of modes) if (m.at.getTime() <= at) armed = m.kind === "mode.armed";
    return armed;
  };
  const targetNodes = new Set(fleet.targets.map((t) => t.node.name));
  const requests = [...ctx.nodes.map((n) => n.node), ...fleet.targets.map((t) => t.node)].flatMap(
    shutdownRequests,
  );
  const whileDryRun = requests.filter((r) => !armedAt(r.at));
  const notTargets = requests.filter((r) => !targetNodes.has(r.node));
  const wouldSend = calls.filter((c) => c.state === "would_send").length;

  // Armed: per outage the soak caused, per target — the rows claimed and the calls that arrived.
  const triggered = episodes.filter((e) => e.lowBatteryAt !== null);
  const armedProblems: string[] = [];
  let armedOutages = 0;
  const explained = new Set<ShutdownRequest>();
  for (const episode of triggered.filter((e) => e.armed)) {
    const from = episode.lowBatteryAt!;
    if (episode.outage) armedOutages += 1;
    for (const target of fleet.targets) {
      const name = target.node.name;
      const arrived = requests.filter(
        (r) => r.node === name && within(r.at, from, episode.endedAt),
      );
      for (const r of arrived) explained.add(r);
      const claimed = calls.filter(
        (c) =>
          c.target_id === target.id &&
          c.state !== "would_send" &&
          within(c.run_created_at.getTime(), from, episode.endedAt),
      );
      const where = `${episode.action} at ${ctx.since(from)}, ${name}`;
      const states = claimed.map((c) => c.state).join(", ") || "none";
      if (claimed.length > 1)
        armedProblems.push(`${where}: ${claimed.length} calls claimed (${states})`);
      if (arrived.length > 1) armedProblems.push(`${where}: ${arrived.length} calls arrived`);
      const sent = claimed.filter((c) => c.state === "sent").length;
      const maybe = claimed.filter((c) => c.state === "unknown" || c.state === "failed").length;
      if (arrived.length < sent || arrived.length > sent + maybe) {
        armedProblems.push(`${where}: claimed ${states}, but ${arrived.length} arrived`);
      }
      if (
        episode.outage &&
        (claimed.length !== 1 || (arrived.length !== 1 && states !== "unknown"))
      ) {
        armedProblems.push(`${where}: an outage, claimed ${states}, ${arrived.length} arrived`);
      }
    }
  }
  const unexplained = requests.filter((r) => !explained.has(r));

  const inWindow = (at: number) => triggered.some((e) => within(at, e.lowBatteryAt!, e.endedAt));
  const uncaused = runs.filter((r) => !inWindow(r.created_at.getTime()));
  const unacted = episodes.flatMap((e) =>
    e.problems.map((p) => `${e.action} at ${ctx.since(e.lowBatteryAt ?? e.endedAt)}: ${p}`),
  );
  const dryOutagesShort = triggered
    .filter((e) => !e.armed && e.outage)
    .flatMap((e) =>
      fleet.targets
        .filter(
          (t) =>
            !calls.some(
              (c) =>
                c.target_id === t.id &&
                c.state === "would_send" &&
                within(c.run_created_at.getTime(), e.lowBatteryAt!, e.endedAt),
            ),
        )
        .map(
          (t) => `${e.action} at ${ctx.since(e.lowBatteryAt!)}: no would-send for ${t.node.name}`,
        ),
    );

  return [
    {
      invariant: "(power) no shutdown call reached a lab node while dry-run",
      held: whileDryRun.length === 0 && notTargets.length === 0,
      detail:
        whileDryRun.length + notTargets.length > 0
          ? list([
              ...whileDryRun.map((r) => `${r.node} at ${ctx.since(r.at)} while dry-run`),
              ...notTargets.map((r) => `${r.node} (not a target) at ${ctx.since(r.at)}`),
            ])
          : `${requests.length} calls reached lab nodes, each while armed; ${wouldSend} would-send in dry-run; ${modes.length} mode changes`,
    },
    {
      invariant: "(power) armed: exactly one shutdown call per target per outage",
      held: armedProblems.length === 0 && unexplained.length === 0,
      detail:
        armedProblems.length + unexplained.length > 0
          ? list([
              ...armedProblems,
              ...unexplained.map((r) => `${r.node} at ${ctx.since(r.at)}: no outage caused it`),
            ])
          : `${armedOutages} armed outages and ${triggered.filter((e) => e.armed).length - armedOutages} with mains back at the latch, ${fleet.targets.length} targets: power_shutdown_calls and the lab's logs agree`,
    },
    {
      invariant: "(power) no shutdown run without a low battery the soak caused",
      held: uncaused.length === 0,
      detail: uncaused.length
        ? list(uncaused.map((r) => `run ${r.id} at ${ctx.since(r.created_at.getTime())}`))
        : `${runs.length} runs, each after one; ${faultsInjected} UPS faults and ${episodes.length - triggered.length} blips started none`,
    },
    {
      invariant: "(power) every low battery the soak caused latched and its run ended",
      held: unacted.length === 0 && dryOutagesShort.length === 0,
      detail:
        unacted.length + dryOutagesShort.length > 0
          ? list([...unacted, ...dryOutagesShort])
          : `${triggered.length} low batteries, ${triggered.filter((e) => !e.armed && e.outage).length} dry-run outages with a would-send per target`,
    },
  ];
}
