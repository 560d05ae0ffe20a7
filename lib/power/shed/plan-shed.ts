import { advance, fail, type Step } from "@/lib/pipeline/step";
import { readPowerSettings } from "@/lib/power/config/power-settings-store";
import { loadClusterGroups } from "@/lib/power/clusters/load-cluster-groups";
import type { PowerServices } from "@/lib/power/shutdown/services";
import { loadTargets } from "@/lib/power/targets/load-targets";
import { reportShed } from "./shed-context";
import { ZShedInput, type ShedGroup, type ShedPlan } from "./shed-plan";

/**
 * Freezes the shed into the run: the due targets grouped by cluster (one API answers for all
 * of a cluster's nodes), the selection (the tag and the list, as set now), the guest deadlines
 * and the mode at this moment. Backup servers carry no guests; a node without an API endpoint
 * is named and left out.
 */
export const planShed: Step<PowerServices> = {
  name: "PlanShed",
  maxDuration: () => 60,
  async visit(ctx) {
    const { db } = ctx.services;
    const input = ZShedInput.safeParse(ctx.context.get("input"));
    if (!input.success) {
      return fail(
        "This run does not say which outage made shedding due; power-shed runs are started by the power monitor.",
      );
    }
    const settings = await readPowerSettings(db);
    const targets = await loadTargets(db, input.data.targetIds);
    const clusterOf = new Map(
      (await loadClusterGroups(db)).flatMap((c) =>
        c.nodes.flatMap((n) => (n.targetId ? [[n.targetId, c] as const] : [])),
      ),
    );
    const groups = new Map<string, ShedGroup>();
    const skipped: ShedPlan["skipped"] = [];
    for (const target of targets) {
      if (target.endpoint?.kind !== "pve-node") {
        skipped.push({
          name: target.name,
          why:
            target.kind === "pbs"
              ? "a backup server runs no guests"
              : `no API endpoint: ${target.problem ?? "unknown"}`,
        });
        continue;
      }
      const cluster = clusterOf.get(target.id);
      const key = cluster?.id ?? target.id;
      const group = groups.get(key) ?? {
        key,
        name: cluster?.name ?? target.name,
        clusterId: cluster?.id ?? null,
        targetId: cluster ? null : target.id,
        nodes: [],
        endpoints: [],
        targetIds: [],
      };
      group.nodes.push(target.endpoint.nodeName);
      group.endpoints.push(target.endpoint);
      group.targetIds.push(target.id);
      groups.set(key, group);
    }
    // Nodes by name within each group: the run's lanes and log read the same on every run.
    for (const group of groups.values()) {
      const order = group.nodes
        .map((name, i) => ({ name, endpoint: group.endpoints[i]!, targetId: group.targetIds[i]! }))
        .sort((a, b) => a.name.localeCompare(b.name));
      group.nodes = order.map((o) => o.name);
      group.endpoints = order.map((o) => o.endpoint);
      group.targetIds = order.map((o) => o.targetId);
    }
    const plan: ShedPlan = {
      mode: settings.mode,
      plannedAt: new Date().toISOString(),
      dueSince: input.data.dueSince,
      afterMinutes: settings.shed.afterMinutes,
      selection: { tag: settings.shed.tag, guests: settings.shed.guests },
      groups: [...groups.values()],
      skipped,
      feeds: [...new Set(targets.flatMap((t) => t.feeds.map((f) => f.upsId)))],
      consoleGuest: settings.shutdown.consoleGuest,
      callTimeoutSeconds: settings.shutdown.callTimeoutSeconds,
      guestTimeoutSeconds: settings.shutdown.guestTimeoutSeconds,
      guestParallelism: settings.shutdown.guestParallelism,
    };
    ctx.context.set("plan", plan);
    ctx.log(`started by the power monitor: ${input.data.why}`);
    ctx.log(
      plan.mode === "armed"
        ? "mode: armed — the shed guests are shut down and read back stopped"
        : "mode: dry-run — nothing will be sent; every shutdown is recorded as 'would …'",
    );
    ctx.log(
      `shed: guests tagged '${plan.selection.tag}'${plan.selection.guests.length > 0 ? ` and ${plan.selection.guests.map((g) => `${g.vmid} on ${g.node}`).join(", ")}` : ""}, on ${plan.groups.map((g) => `${g.name} (${g.nodes.join(", ")})`).join("; ") || "no node"}`,
    );
    for (const s of skipped) ctx.log(`${s.name}: left out: ${s.why}`);
    if (plan.groups.length === 0) return fail("None of the due targets is a node with guests.");
    await reportShed(ctx, {
      severity: "warning",
      kind: "power.shed.started",
      message: `Early shedding${plan.mode === "armed" ? "" : " (dry-run)"}: ${input.data.why}: the guests tagged '${plan.selection.tag}'${plan.selection.guests.length > 0 ? " or listed" : ""} on ${plan.groups.flatMap((g) => g.nodes).join(", ")} go down to stretch the runtime`,
      data: { mode: plan.mode, nodes: plan.groups.flatMap((g) => g.nodes) },
    });
    return advance(`${plan.groups.length} group(s), ${plan.mode}`);
  },
};
