import { effectivePrivs, hasPriv, readUserCfg } from "../access";
import { ApiError, ROUTES, type Route, type RouteContext } from "../routes";
import { guestConfig } from "./guest-configs";
import { configDigest, parseWakeOnLan, readNodeConfig, sendMagicPacket } from "./node-config";
import { joinInfo } from "./join-info";
import { CEPH_FLAGS, type CephFlag, type ClusterGuest, type LabClusterModel } from "./model";

/**
 * The cluster endpoints of a lab node's API, answered from the shared model. Each node's API
 * matches these before the single-node table (lab/pve/routes.ts), so `/cluster/status`,
 * `/cluster/resources` and the guest lists are the cluster's. Privileges as Proxmox checks them.
 */

const NODE_RE = /^[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?$/;

function requirePriv(ctx: RouteContext, target: string, privs: string[], any = false): void {
  const held = effectivePrivs(readUserCfg(ctx.root), ctx.authid, target);
  const ok = any ? privs.some((p) => held.has(p)) : privs.every((p) => held.has(p));
  if (!ok) {
    const missing = any ? privs.join("|") : privs.find((p) => !held.has(p));
    throw new ApiError(403, `Permission check failed (${target}, ${missing})`);
  }
}

function invalid(param: string, message: string): never {
  throw new ApiError(400, "Parameter verification failed.", { [param]: message });
}

/** `{node}`: a member that is online (the request is proxied to it), else what Proxmox answers. */
function targetNode(model: LabClusterModel, ctx: RouteContext): string {
  const name = ctx.params.node === "localhost" ? ctx.node : (ctx.params.node ?? "");
  if (!NODE_RE.test(name))
    invalid("node", "invalid format - value does not look like a valid node name");
  const node = model.node(name);
  if (!node) {
    throw new ApiError(
      500,
      `hostname lookup '${name}' failed - failed to get address info for: ${name}: Name or service not known`,
    );
  }
  if (!node.online) {
    throw new ApiError(
      595,
      "Errors during connection establishment, proxy handshake: No route to host",
    );
  }
  return name;
}

function boolOf(ctx: RouteContext, name: string, fallback: boolean): boolean {
  const v = ctx.params[name];
  if (v === undefined) return fallback;
  if (["1", "true", "yes", "on"].includes(v)) return true;
  if (["0", "false", "no", "off"].includes(v)) return false;
  return invalid(name, `type check ('boolean') failed - got '${v}'`);
}

function intOf(ctx: RouteContext, name: string, fallback: number, min = 0, max = Infinity): number {
  const v = ctx.params[name];
  if (v === undefined) return fallback;
  if (!/^\d+$/.test(v)) invalid(name, `type check ('integer') failed - got '${v}'`);
  const n = Number(v);
  if (n < min) invalid(name, `value must have a minimum value of ${min}`);
  if (n > max) invalid(name, `value may not exceed ${max}`);
  return n;
}

function vmidList(name: string, text: string): number[] {
  const ids = text.split(/[\s,;\0]+/).filter(Boolean);
  for (const id of ids)
    if (!/^\d+$/.test(id) || Number(id) < 100)
      invalid(name, `invalid format - value does not look like a valid VM ID`);
  return ids.map(Number);
}

function guestOn(
  model: LabClusterModel,
  ctx: RouteContext,
  node: string,
  type: ClusterGuest["type"],
  priv = "VM.PowerMgmt",
): ClusterGuest {
  const text = ctx.params.vmid ?? "";
  if (!/^\d+$/.test(text)) invalid("vmid", `type check ('integer') failed - got '${text}'`);
  const vmid = Number(text);
  requirePriv(ctx, `/vms/${vmid}`, [priv]);
  const guest = model.guests.get(vmid);
  if (!guest || guest.node !== node || guest.type !== type) {
    const dir = type === "qemu" ? "qemu-server" : "lxc";
    throw new ApiError(
      500,
      `Configuration file 'nodes/${node}/${dir}/${vmid}.conf' does not exist`,
    );
  }
  return guest;
}

/** A migration holds the guest's config lock: power actions on it are refused meanwhile. */
function unlocked(guest: ClusterGuest): ClusterGuest {
  if (guest.migratingTo !== null) {
    throw new ApiError(500, `${guest.type === "qemu" ? "VM" : "CT"} is locked (migrate)`);
  }
  return guest;
}

function guestEntry(model: LabClusterModel, g: ClusterGuest): Record<string, unknown> {
  const nodeOnline = model.node(g.node)?.online ?? false;
  const entry: Record<string, unknown> = {
    vmid: g.vmid,
    name: g.name,
    // What pvestatd last broadcast is gone with the node: Proxmox shows such guests as unknown.
    status: nodeOnline ? g.status : "unknown",
    maxmem: g.memoryBytes,
    mem: g.status === "running" ? Math.round(g.memoryBytes * 0.6) : 0,
    maxdisk: 32 * 1024 ** 3,
    cpus: 2,
    uptime: g.status === "running" ? 3600 : 0,
  };
  if (g.template) entry.template = 1;
  if (g.migratingTo !== null) entry.lock = "migrate";
  // pve-manager's resources and qemu-server's/pve-container's lists copy `tags` from the
  // config as written, only when the guest has any (PVE/API2/Cluster.pm `$prop_list`).
  if (g.tags !== null) entry.tags = g.tags;
  return entry;
}

function visible(model: LabClusterModel, ctx: RouteContext): ClusterGuest[] {
  const cfg = readUserCfg(ctx.root);
  return [...model.guests.values()]
    .filter((g) => hasPriv(cfg, ctx.authid, `/vms/${g.vmid}`, "VM.Audit"))
    .sort((a, b) => a.vmid - b.vmid);
}

/** Starts a task: its UPID now, its work in the background (as a forked worker). */
function task(
  model: LabClusterModel,
  ctx: RouteContext,
  node: string,
  type: string,
  id: string,
  work: () => Promise<string>,
): string {
  const t = model.startTask(node, type, id, ctx.authid);
  void work().then(
    (exit) => model.endTask(t, exit),
    (error: unknown) => model.endTask(t, error instanceof Error ? error.message : String(error)),
  );
  return t.upid;
}

function guestPowerRoutes(model: LabClusterModel, type: ClusterGuest["type"]): Route[] {
  const base = `/nodes/{node}/${type}/{vmid}/status`;
  const kind = type === "qemu" ? "qm" : "vz";
  return [
    {
      method: "GET",
      path: `/nodes/{node}/${type}`,
      params: type === "qemu" ? ["full"] : [],
      handler: (ctx) => {
        const node = targetNode(model, ctx);
        return visible(model, ctx)
          .filter((g) => g.node === node && g.type === type)
          .map((g) => guestEntry(model, g));
      },
    },
    {
      method: "GET",
      path: `${base}/current`,
      params: [],
      handler: (ctx) => {
        const node = targetNode(model, ctx);
        const guest = guestOn(model, ctx, node, type, "VM.Audit");
        const res = model.ha.get(guest.vmid);
        return {
          ...guestEntry(model, guest),
          ...(type === "qemu" ? { qmpstatus: guest.status } : {}),
          ha:
            res && model.haManages(guest.vmid) ? { managed: 1, state: res.state } : { managed: 0 },
        };
      },
    },
    {
      method: "POST",
      path: `${base}/shutdown`,
      params: type === "qemu" ? ["timeout", "forceStop"] : ["timeout", "forceStop"],
      handler: (ctx) => {
        const node = targetNode(model, ctx);
        const guest = unlocked(guestOn(model, ctx, node, type));
        const timeoutS = intOf(ctx, "timeout", 60);
        const force = boolOf(ctx, "forceStop", false);
        return task(model, ctx, node, `${kind}shutdown`, String(guest.vmid), async () => {
          const outcome = await model.shutdownGuest(guest.vmid, timeoutS, force);
          if (outcome === "timeout") return "VM quit/powerdown failed";
          return outcome === "hung" ? "got timeout" : "OK";
        });
      },
    },
    {
      // The config as pmxcfs holds it, asked of any member (Proxmox proxies to the guest's node).
      method: "GET",
      path: `/nodes/{node}/${type}/{vmid}/config`,
      params: ["current", "snapshot"],
      handler: (ctx) => {
        const node = targetNode(model, ctx);
        const guest = guestOn(model, ctx, node, type, "VM.Audit");
        const config = guestConfig(guest, model.ceph?.pools[0]?.name ?? "vm-pool");
        return { ...Object.fromEntries(config), digest: "0".repeat(40) };
      },
    },
    {
      method: "POST",
      path: `${base}/start`,
      params: type === "qemu" ? ["skiplock", "timeout"] : ["skiplock"],
      handler: (ctx) => {
        const node = targetNode(model, ctx);
        const guest = unlocked(guestOn(model, ctx, node, type));
        if (guest.status === "running") {
          throw new ApiError(500, `${type === "qemu" ? "VM" : "CT"} ${guest.vmid} already running`);
        }
        return task(model, ctx, node, `${kind}start`, String(guest.vmid), async () => {
          const outcome = await model.startGuest(guest.vmid);
          return outcome === "running" ? "OK" : outcome;
        });
      },
    },
    {
      method: "POST",
      path: `${base}/stop`,
      params: [],
      handler: (ctx) => {
        const node = targetNode(model, ctx);
        const guest = unlocked(guestOn(model, ctx, node, type));
        return task(model, ctx, node, `${kind}stop`, String(guest.vmid), async () => {
          const outcome = await model.stopGuest(guest.vmid);
          return outcome === "stopped" ? "OK" : "got timeout";
        });
      },
    },
    migrateRoute(model, type),
  ];
}

/**
 * `POST /nodes/{node}/{qemu|lxc}/{vmid}/migrate`: what Proxmox's API handler refuses before any
 * task (no quorum, a target that is no member or the node itself, a running VM without
 * `online`, a running container without `restart`, a locked guest), then the migration task
 * (lab/pve/cluster/model.ts `migrateGuest`). An HA-managed guest is handed to HA instead
 * (`ha-manager crm-command migrate`): the task ends at once and HA moves it.
 */
function migrateRoute(model: LabClusterModel, type: ClusterGuest["type"]): Route {
  return {
    method: "POST",
    path: `/nodes/{node}/${type}/{vmid}/migrate`,
    params:
      type === "qemu"
        ? [
            "target",
            "online",
            "force",
            "migration_network",
            "migration_type",
            "targetstorage",
            "bwlimit",
            "with-local-disks",
            "with-conntrack-state",
          ]
        : ["target", "online", "restart", "timeout", "target-storage", "bwlimit"],
    handler: (ctx) => {
      const node = targetNode(model, ctx);
      const guest = unlocked(guestOn(model, ctx, node, type, "VM.Migrate"));
      const target = ctx.params.target;
      if (target === undefined) invalid("target", "property is missing and it is not optional");
      if (!NODE_RE.test(target))
        invalid("target", "invalid format - value does not look like a valid node name");
      if (!model.node(target)) throw new ApiError(500, `no such cluster node '${target}'`);
      if (target === node) throw new ApiError(500, "target is local node.");
      quorumFor(model);
      const online = boolOf(ctx, "online", false);
      const running = guest.status === "running";
      if (type === "qemu") {
        if (running && !online)
          throw new ApiError(500, "can't migrate running VM without --online");
        if (boolOf(ctx, "with-local-disks", false))
          invalid("with-local-disks", "the lab does not model copying local disks");
      } else {
        if (online) throw new ApiError(500, "lxc live migration is currently not implemented");
        if (running && !boolOf(ctx, "restart", false))
          throw new ApiError(500, "can't migrate running container without --online or --restart");
      }
      if (!model.node(target)!.online) {
        throw new ApiError(500, `target node '${target}' is not online`);
      }
      if (model.haManages(guest.vmid)) {
        return task(model, ctx, node, "hamigrate", String(guest.vmid), async () => {
          void model
            .sleep(model.timing.haRecoveryMs)
            .then(() => model.migrateGuest(guest.vmid, target));
          return "OK";
        });
      }
      return task(
        model,
        ctx,
        node,
        `${type === "qemu" ? "qm" : "vz"}migrate`,
        String(guest.vmid),
        () => model.migrateGuest(guest.vmid, target),
      );
    },
  };
}

/**
 * `GET /nodes/{node}/status` of a member: the single node's answer (lab/pve/routes.ts), with the
 * memory the cluster model accounts (the host's own share plus its running guests').
 */
function nodeStatusRoute(model: LabClusterModel): Route {
  const single = ROUTES.find((r) => r.method === "GET" && r.path === "/nodes/{node}/status")!;
  return {
    ...single,
    handler: (ctx) => {
      const node = targetNode(model, ctx);
      const status = single.handler({ ...ctx, node, params: { ...ctx.params, node } }) as Record<
        string,
        unknown
      >;
      const memory = model.memoryOf(node);
      return { ...status, memory: { ...memory, available: memory.free } };
    },
  };
}

function quorumFor(model: LabClusterModel): void {
  if (!model.quorate) throw new ApiError(500, "cluster not ready - no quorum?");
}

function cephOf(model: LabClusterModel): NonNullable<LabClusterModel["ceph"]> {
  if (!model.ceph) throw new ApiError(500, "binary not installed: /usr/bin/ceph-mon");
  return model.ceph;
}

function flagOf(ctx: RouteContext): CephFlag {
  const flag = ctx.params.flag ?? "";
  if (!(CEPH_FLAGS as readonly string[]).includes(flag)) {
    invalid(
      "flag",
      `value '${flag}' does not have a value in the enumeration '${CEPH_FLAGS.join(", ")}'`,
    );
  }
  return flag as CephFlag;
}

/** The routes one node's API answers from the cluster model (matched before lab/pve/routes.ts). */
export function clusterRoutes(model: LabClusterModel): Route[] {
  const routes: Route[] = [
    {
      method: "GET",
      path: "/cluster/status",
      params: [],
      handler: (ctx) => {
        requirePriv(ctx, "/", ["Sys.Audit"]);
        return [
          {
            type: "cluster",
            id: "cluster",
            name: model.name,
            nodes: model.nodes.length,
            quorate: model.quorate ? 1 : 0,
            version: model.nodes.length + 1,
          },
          ...model.nodes.map((n) => ({
            type: "node",
            id: `node/${n.name}`,
            name: n.name,
            nodeid: n.nodeid,
            ip: n.ip,
            local: n.name === ctx.node ? 1 : 0,
            online: n.online ? 1 : 0,
            level: "",
          })),
        ];
      },
    },
    {
      method: "GET",
      path: "/cluster/config/join",
      params: ["node"],
      handler: (ctx) => {
        requirePriv(ctx, "/", ["Sys.Audit"]);
        const node = ctx.params.node;
        if (node !== undefined && !NODE_RE.test(node))
          invalid("node", "invalid format - value does not look like a valid node name");
        return joinInfo(model, ctx.root, ctx.node, node);
      },
    },
    {
      method: "GET",
      path: "/cluster/resources",
      params: ["type"],
      handler: (ctx) => {
        const type = ctx.params.type;
        if (type !== undefined && !["vm", "storage", "node", "sdn"].includes(type)) {
          invalid(
            "type",
            `value '${type}' does not have a value in the enumeration 'vm, storage, node, sdn'`,
          );
        }
        const out: Record<string, unknown>[] = [];
        if (type === undefined || type === "vm") {
          for (const g of visible(model, ctx)) {
            const entry: Record<string, unknown> = {
              ...guestEntry(model, g),
              id: `${g.type}/${g.vmid}`,
              type: g.type,
              node: g.node,
              template: g.template ? 1 : 0,
            };
            const res = model.ha.get(g.vmid);
            if (res) entry.hastate = model.haManages(g.vmid) ? res.state : "ignored";
            out.push(entry);
          }
        }
        if (type === undefined || type === "node") {
          const cfg = readUserCfg(ctx.root);
          for (const n of model.nodes) {
            if (!hasPriv(cfg, ctx.authid, `/nodes/${n.name}`, "Sys.Audit")) continue;
            out.push({
              id: `node/${n.name}`,
              type: "node",
              node: n.name,
              status: n.online ? "online" : "offline",
              level: "",
            });
          }
        }
        return out;
      },
    },
    ...guestPowerRoutes(model, "qemu"),
    ...guestPowerRoutes(model, "lxc"),
    nodeStatusRoute(model),
    ...nodeConfigRoutes(model),
    {
      method: "POST",
      path: "/nodes/{node}/status",
      params: ["command"],
      handler: (ctx) => {
        const node = targetNode(model, ctx);
        const command = ctx.params.command;
        if (command !== "shutdown") {
          // Reboot is the single-node lab's business; a cluster node here only powers off.
          invalid(
            "command",
            `value '${command ?? ""}' does not have a value in the enumeration 'shutdown'`,
          );
        }
        requirePriv(ctx, `/nodes/${node}`, ["Sys.PowerMgmt"]);
        void model.shutdownNode(node);
        return null;
      },
    },
    {
      method: "POST",
      path: "/nodes/{node}/stopall",
      params: ["vms", "force-stop", "timeout", "max-workers"],
      handler: (ctx) => {
        const node = targetNode(model, ctx);
        const vms = ctx.params.vms === undefined ? undefined : vmidList("vms", ctx.params.vms);
        // VM.PowerMgmt on / or, when vms names them, on each of those guests.
        const cfg = readUserCfg(ctx.root);
        if (!hasPriv(cfg, ctx.authid, "/", "VM.PowerMgmt")) {
          if (!vms) throw new ApiError(403, "Permission check failed (/, VM.PowerMgmt)");
          for (const vmid of vms) requirePriv(ctx, `/vms/${vmid}`, ["VM.PowerMgmt"]);
        }
        const options = {
          ...(vms ? { vms } : {}),
          timeoutS: intOf(ctx, "timeout", 180),
          forceStop: boolOf(ctx, "force-stop", true),
          maxWorkers: intOf(ctx, "max-workers", 4, 1),
        };
        return task(model, ctx, node, "stopall", "", async () => {
          const results = await model.stopAll(node, options);
          return [...results.values()].every((r) => r === "stopped")
            ? "OK"
            : "some guests did not stop";
        });
      },
    },
    {
      method: "GET",
      path: "/nodes/{node}/tasks/{upid}/status",
      params: [],
      handler: (ctx) => {
        const node = targetNode(model, ctx);
        const t = model.tasks.get(ctx.params.upid ?? "");
        if (!t || t.node !== node) throw new ApiError(500, `no such task`);
        if (t.user !== ctx.authid) requirePriv(ctx, `/nodes/${node}`, ["Sys.Audit"]);
        return {
          upid: t.upid,
          node: t.node,
          pid: t.pid,
          pstart: t.pstart,
          starttime: t.starttime,
          type: t.type,
          id: t.id,
          user: t.user,
          status: t.status,
          ...(t.exitstatus === undefined ? {} : { exitstatus: t.exitstatus }),
        };
      },
    },
    {
      method: "GET",
      path: "/cluster/options",
      params: [],
      handler: (ctx) => {
        requirePriv(ctx, "/", ["Sys.Audit"]);
        const options: Record<string, unknown> = { keyboard: "en-us" };
        if (model.haShutdownPolicy) options.ha = { shutdown_policy: model.haShutdownPolicy };
        return options;
      },
    },
    {
      method: "GET",
      path: "/cluster/ha/resources",
      params: ["type"],
      handler: (ctx) => {
        requirePriv(ctx, "/", ["Sys.Audit"]);
        const type = ctx.params.type;
        return [...model.ha.values()]
          .filter((r) => type === undefined || r.type === type)
          .map((r) => ({
            sid: r.sid,
            type: r.type,
            state: r.state,
            digest: "lab",
            max_restart: 1,
            max_relocate: 1,
            failback: 1,
          }));
      },
    },
    {
      method: "GET",
      path: "/cluster/ha/status",
      params: [],
      handler: () => [
        { name: "current" },
        { name: "manager_status" },
        ...(model.hasDisarm ? [{ name: "disarm-ha" }, { name: "arm-ha" }] : []),
      ],
    },
    {
      method: "GET",
      path: "/cluster/ha/status/current",
      params: [],
      handler: (ctx) => {
        requirePriv(ctx, "/", ["Sys.Audit"]);
        const master = model.nodes.find((n) => n.online)?.name ?? ctx.node;
        const now = Math.floor(Date.now() / 1000);
        const out: Record<string, unknown>[] = [
          {
            id: "quorum",
            type: "quorum",
            node: ctx.node,
            status: model.quorate ? "OK" : "No quorum on node",
            quorate: model.quorate ? 1 : 0,
          },
          {
            id: "master",
            type: "master",
            node: master,
            status: `${master} (active, ${new Date().toUTCString()})`,
            timestamp: now,
          },
        ];
        if (model.hasDisarm) {
          out.push({
            id: "fencing",
            type: "fencing",
            node: master,
            "armed-state": model.armedState,
            ...(model.resourceMode ? { resource_mode: model.resourceMode } : {}),
            status: model.armedState,
          });
        }
        for (const n of model.nodes) {
          out.push({
            id: `lrm:${n.name}`,
            type: "lrm",
            node: n.name,
            status: n.online ? `${n.name} (active)` : `${n.name} (old timestamp - dead?)`,
            timestamp: now,
          });
        }
        for (const [vmid, r] of model.ha) {
          const g = model.guests.get(vmid)!;
          out.push({
            id: `service:${r.sid}`,
            type: "service",
            sid: r.sid,
            node: g.node,
            state: r.state,
            request_state: r.state,
            status: `${r.sid} (${g.node}, ${r.state})`,
            crm_state: r.state,
            max_relocate: 1,
            max_restart: 1,
            failback: 1,
          });
        }
        return out;
      },
    },
    {
      method: "POST",
      path: "/cluster/ha/status/disarm-ha",
      params: ["resource-mode"],
      handler: (ctx) => {
        if (!model.hasDisarm)
          throw new ApiError(501, `Method 'POST /cluster/ha/status/disarm-ha' not implemented`);
        requirePriv(ctx, "/", ["Sys.Console"]);
        const mode = ctx.params["resource-mode"];
        if (mode !== "freeze" && mode !== "ignore") {
          invalid(
            "resource-mode",
            mode === undefined
              ? "property is missing and it is not optional"
              : `value '${mode}' does not have a value in the enumeration 'freeze, ignore'`,
          );
        }
        quorumFor(model);
        model.disarm(mode);
        return null;
      },
    },
    {
      method: "POST",
      path: "/cluster/ha/status/arm-ha",
      params: [],
      handler: (ctx) => {
        if (!model.hasDisarm)
          throw new ApiError(501, `Method 'POST /cluster/ha/status/arm-ha' not implemented`);
        requirePriv(ctx, "/", ["Sys.Console"]);
        quorumFor(model);
        model.arm();
        return null;
      },
    },
    {
      method: "GET",
      path: "/cluster/ceph/status",
      params: [],
      handler: (ctx) => {
        requirePriv(ctx, "/", ["Sys.Audit", "Datastore.Audit"], true);
        const ceph = cephOf(model);
        const up = model.nodes.filter((n) => n.online).length * ceph.osdsPerNode;
        const total = model.nodes.length * ceph.osdsPerNode;
        const monsUp = ceph.monitors.filter((m) => model.node(m)?.online);
        const health = model.cephBlocked()
          ? "HEALTH_ERR"
          : up < total || ceph.flags.size > 0
            ? "HEALTH_WARN"
            : "HEALTH_OK";
        return {
          fsid: "5f1a7c0e-lab0-4c1a-9b2e-000000000001",
          health: { status: health },
          quorum_names: monsUp,
          monmap: {
            epoch: 3,
            mons: ceph.monitors.map((name, rank) => ({
              name,
              rank,
              addr: `${model.node(name)?.ip}:6789/0`,
            })),
          },
          osdmap: { num_osds: total, num_up_osds: up, num_in_osds: total },
          pgmap: {
            pgs_by_state: [
              {
                state_name: model.cephBlocked()
                  ? "undersized+degraded+peered"
                  : up < total
                    ? "active+undersized+degraded"
                    : "active+clean",
                count: 128,
              },
            ],
          },
        };
      },
    },
    {
      method: "GET",
      path: "/cluster/ceph/flags",
      params: [],
      handler: (ctx) => {
        requirePriv(ctx, "/", ["Sys.Audit"]);
        const ceph = cephOf(model);
        return CEPH_FLAGS.map((name) => ({ name, value: ceph.flags.has(name) ? 1 : 0 }));
      },
    },
    {
      method: "GET",
      path: "/cluster/ceph/flags/{flag}",
      params: [],
      handler: (ctx) => {
        requirePriv(ctx, "/", ["Sys.Audit"]);
        const flag = flagOf(ctx);
        return cephOf(model).flags.has(flag) ? 1 : 0;
      },
    },
    {
      method: "PUT",
      path: "/cluster/ceph/flags/{flag}",
      params: ["value"],
      handler: (ctx) => {
        requirePriv(ctx, "/", ["Sys.Modify"]);
        const flag = flagOf(ctx);
        if (ctx.params.value === undefined)
          invalid("value", "property is missing and it is not optional");
        cephOf(model);
        const value = boolOf(ctx, "value", false);
        if (!model.faults.singleFlagIgnored) model.setFlag(flag, value);
        return null;
      },
    },
    {
      method: "PUT",
      path: "/cluster/ceph/flags",
      params: [...CEPH_FLAGS],
      handler: (ctx) => {
        requirePriv(ctx, "/", ["Sys.Modify"]);
        cephOf(model);
        const changes = CEPH_FLAGS.filter((f) => ctx.params[f] !== undefined).map(
          (f) => [f, boolOf(ctx, f, false)] as const,
        );
        if (changes.length === 0) throw new ApiError(500, "Not setting or unsetting any flag");
        return task(model, ctx, ctx.node, "cephsetflags", "", async () => {
          await model.sleep(200);
          if (model.faults.bulkFlagsIgnored) return "OK";
          for (const [flag, value] of changes) model.setFlag(flag, value);
          return "OK";
        });
      },
    },
  ];
  if (model.version !== "8.4") {
    // Bulk actions arrived with Proxmox VE 9.0.
    routes.push({
      method: "POST",
      path: "/cluster/bulk-action/guest/shutdown",
      params: ["vms", "timeout", "force-stop", "max-workers", "maxworkers"],
      handler: (ctx) => {
        const cfg = readUserCfg(ctx.root);
        const vms = ctx.params.vms === undefined ? undefined : vmidList("vms", ctx.params.vms);
        if (vms) for (const vmid of vms) requirePriv(ctx, `/vms/${vmid}`, ["VM.PowerMgmt"]);
        const targets = [...model.guests.values()].filter(
          (g) =>
            (vms
              ? vms.includes(g.vmid)
              : hasPriv(cfg, ctx.authid, `/vms/${g.vmid}`, "VM.PowerMgmt")) &&
            g.status === "running" &&
            model.node(g.node)?.online,
        );
        const options = {
          timeoutS: intOf(ctx, "timeout", 180),
          forceStop: boolOf(ctx, "force-stop", true),
          maxWorkers: intOf(ctx, "max-workers", intOf(ctx, "maxworkers", 4, 1, 64), 1, 64),
        };
        return task(model, ctx, ctx.node, "bulkshutdown", "", async () => {
          const results = await model.inParallel(targets, options);
          return [...results.values()].every((r) => r === "stopped")
            ? "OK"
            : "some guests did not stop";
        });
      },
    });
  }
  return routes;
}

/** The properties of a node's config (pve-manager PVE/NodeConfig.pm `$confdesc`). */
const NODE_CONFIG_PROPERTIES = [
  "acme",
  "acmedomain0",
  "acmedomain1",
  "acmedomain2",
  "acmedomain3",
  "acmedomain4",
  "acmedomain5",
  "ballooning-target",
  "description",
  "startall-onboot-delay",
  "wakeonlan",
];

/**
 * `GET /nodes/{node}/config` (`Sys.Audit` on `/`, proxied to the node, which must be up) and
 * `POST /nodes/{node}/wakeonlan` as pve-manager's PVE/API2/NodeConfig.pm and Nodes.pm have them.
 * The wake is not proxied: the node that handles the request — never `{node}` itself — sends
 * the packet for `{node}`'s MAC to its own `broadcast-address` (255.255.255.255 by default).
 */
function nodeConfigRoutes(model: LabClusterModel): Route[] {
  return [
    {
      method: "GET",
      path: "/nodes/{node}/config",
      params: ["property"],
      handler: (ctx) => {
        const node = targetNode(model, ctx);
        requirePriv(ctx, "/", ["Sys.Audit"]);
        const property = ctx.params.property;
        if (property !== undefined && !NODE_CONFIG_PROPERTIES.includes(property))
          invalid(
            "property",
            `value '${property}' does not have a value in the enumeration '${NODE_CONFIG_PROPERTIES.join(", ")}'`,
          );
        const { conf, raw } = readNodeConfig(ctx.root, node);
        if (property !== undefined)
          return conf[property] === undefined ? {} : { [property]: conf[property] };
        return { ...conf, digest: configDigest(raw) };
      },
    },
    {
      method: "POST",
      path: "/nodes/{node}/wakeonlan",
      params: [],
      handler: async (ctx) => {
        const name = ctx.params.node ?? "";
        if (!NODE_RE.test(name))
          invalid("node", "invalid format - value does not look like a valid node name");
        requirePriv(ctx, `/nodes/${name}`, ["Sys.PowerMgmt"]);
        if (name === "localhost" || name === ctx.node)
          throw new ApiError(500, `'${name}' is local node, cannot wake my self!`);
        if (!model.node(name)) throw new ApiError(500, `no such cluster node '${name}'`);
        const wol = wakeOnLanOf(readNodeConfig(ctx.root, name).conf);
        if (wol.mac === undefined)
          throw new ApiError(500, `No wake on LAN MAC address defined for '${name}'!`);
        const local = wakeOnLanOf(readNodeConfig(ctx.root, ctx.node).conf);
        const broadcast = local["broadcast-address"] ?? "255.255.255.255";
        try {
          await sendMagicPacket(wol.mac, broadcast, model.wakeOnLanPort);
        } catch (error) {
          throw new ApiError(
            500,
            `Unable to send packet: ${error instanceof Error ? error.message : String(error)}`,
          );
        }
        return wol.mac;
      },
    },
  ];
}

function wakeOnLanOf(conf: Record<string, string>): ReturnType<typeof parseWakeOnLan> {
  if (conf.wakeonlan === undefined) return {};
  try {
    return parseWakeOnLan(conf.wakeonlan);
  } catch (error) {
    throw new ApiError(500, error instanceof Error ? error.message : String(error));
  }
}
