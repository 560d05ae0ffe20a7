import { z } from "zod";
import type { Database } from "@/lib/db/client";
import { proxmoxClientForHost } from "@/lib/host-access/proxmox-client";
import { ProxmoxUnavailableError } from "@/lib/proxmox/errors";
import {
  apiBaseUrl,
  pinnedApiCall,
  probeApi,
  type PinnedRequest,
} from "@/lib/proxmox/pinned-https";
import type { PveEndpoint } from "@/lib/power/targets/load-targets";

/**
 * The cluster-wide calls of the shutdown sequence and of restore, to one member's API with that
 * member's token over its pinned certificate (pmxcfs gives every member the same view, and
 * Proxmox proxies `/nodes/{other}/…` to the node named). The member asked is one that answered
 * a probe just now; a call that gets no answer from it (refused, cut, silent, a proxy's 5xx) is
 * asked of the next member that answers, so a dead or cut-off node never stops the sequence
 * while another member can speak for the cluster. Every failure to get a clean answer from any
 * member throws; only an answer says something is absent.
 */

/** Every request the sequence and restore send; a test checks them against Proxmox's schema. */
export const CLUSTER_SEQUENCE_REQUESTS = [
  "POST /cluster/ha/status/disarm-ha",
  "POST /cluster/ha/status/arm-ha",
  "GET /cluster/ha/status/current",
  "GET /cluster/resources",
  "GET /access/permissions",
  "POST /cluster/bulk-action/guest/shutdown",
  "POST /nodes/{node}/qemu/{vmid}/status/shutdown",
  "POST /nodes/{node}/lxc/{vmid}/status/shutdown",
  "POST /nodes/{node}/qemu/{vmid}/status/stop",
  "POST /nodes/{node}/lxc/{vmid}/status/stop",
  "GET /nodes/{node}/tasks/{upid}/status",
  "GET /cluster/ha/status",
  "GET /cluster/ha/resources",
  "POST /nodes/{node}/qemu/{vmid}/migrate",
  "POST /nodes/{node}/lxc/{vmid}/migrate",
  "GET /cluster/ceph/flags",
  "PUT /cluster/ceph/flags",
  "PUT /cluster/ceph/flags/{flag}",
  "GET /nodes/{node}/qemu",
  "GET /nodes/{node}/lxc",
  "GET /nodes/{node}/qemu/{vmid}/config",
  "GET /nodes/{node}/lxc/{vmid}/config",
  "GET /nodes/{node}/qemu/{vmid}/status/current",
  "GET /nodes/{node}/lxc/{vmid}/status/current",
  "POST /nodes/{node}/qemu/{vmid}/status/start",
  "POST /nodes/{node}/lxc/{vmid}/status/start",
  "GET /cluster/status",
  "GET /cluster/ceph/status",
] as const;

/** The flags that keep Ceph from rebalancing while its OSD nodes go down one by one. */
export const SHUTDOWN_CEPH_FLAGS = ["noout", "nobackfill", "norecover", "norebalance"] as const;
export type ShutdownCephFlag = (typeof SHUTDOWN_CEPH_FLAGS)[number];

const ZFlag = z.coerce.number();

/** `GET /cluster/ha/status/current`: the fencing entry (9.2+) carries `armed-state`. */
const ZHaStatus = z.array(
  z
    .object({
      id: z.string(),
      type: z.string(),
      "armed-state": z.string().optional(),
      resource_mode: z.string().optional(),
    })
    .loose(),
);

const ZGuestResource = z
  .object({
    id: z.string(),
    type: z.string(),
    vmid: z.coerce.number().int(),
    node: z.string(),
    status: z.string(),
    name: z.string().optional(),
    template: ZFlag.optional(),
    /** Configured memory in bytes. */
    maxmem: z.coerce.number().optional(),
    /** `migrate`, `backup`, …: an operation holds the guest's config. */
    lock: z.string().optional(),
    /** Its config's `tags` as written (`shed;web`); absent when it has none. */
    tags: z.string().optional(),
  })
  .loose();
export type GuestResource = z.infer<typeof ZGuestResource>;

const ZCephFlags = z.array(z.object({ name: z.string(), value: ZFlag }).loose());

/** `GET /cluster/status`: the cluster entry (only when clustered) and one per node. */
const ZClusterStatus = z.array(
  z
    .object({
      type: z.string(),
      name: z.string().optional(),
      quorate: ZFlag.optional(),
      online: ZFlag.optional(),
    })
    .loose(),
);

/** `GET /cluster/ceph/status`: the placement groups by state. */
const ZCephPgs = z
  .object({
    pgmap: z
      .object({
        pgs_by_state: z
          .array(z.object({ state_name: z.string(), count: z.coerce.number() }).loose())
          .optional(),
      })
      .loose()
      .optional(),
  })
  .loose();

const ZTaskStatus = z.object({ status: z.string(), exitstatus: z.string().optional() }).loose();

export type GuestType = "qemu" | "lxc";
type Form = NonNullable<PinnedRequest["form"]>;

/** A request as the log and the timeline show it, the token masked. */
export function requestLine(
  endpoint: Pick<PveEndpoint, "address" | "apiPort">,
  method: PinnedRequest["method"],
  path: string,
  form?: Form,
): string {
  const params = form
    ? ` ${Object.entries(form)
        .map(([k, v]) => `${k}=${typeof v === "string" ? v : v.join(",")}`)
        .join(" ")}`
    : "";
  return `${method} ${apiBaseUrl(endpoint.address, endpoint.apiPort)}/api2/json${path}${params}`;
}

/** Proxmox answers 501 "Method '…' not implemented" for a path it does not have. */
export function isNotImplemented(error: unknown): boolean {
  return error instanceof ProxmoxUnavailableError && error.status === 501;
}

export const paths = {
  disarmHa: "/cluster/ha/status/disarm-ha",
  armHa: "/cluster/ha/status/arm-ha",
  haStatus: "/cluster/ha/status/current",
  guests: "/cluster/resources?type=vm",
  bulkShutdown: "/cluster/bulk-action/guest/shutdown",
  guest: (
    node: string,
    type: GuestType,
    vmid: number,
    action: "shutdown" | "stop" | "start" | "current",
  ) => `/nodes/${encodeURIComponent(node)}/${type}/${vmid}/status/${action}`,
  migrate: (node: string, type: GuestType, vmid: number) =>
    `/nodes/${encodeURIComponent(node)}/${type}/${vmid}/migrate`,
  guestConfig: (node: string, type: GuestType, vmid: number) =>
    `/nodes/${encodeURIComponent(node)}/${type}/${vmid}/config`,
  clusterStatus: "/cluster/status",
  cephStatus: "/cluster/ceph/status",
  haIndex: "/cluster/ha/status",
  haResources: "/cluster/ha/resources",
  task: (node: string, upid: string) =>
    `/nodes/${encodeURIComponent(node)}/tasks/${encodeURIComponent(upid)}/status`,
  cephFlags: "/cluster/ceph/flags",
  cephFlag: (flag: string) => `/cluster/ceph/flags/${encodeURIComponent(flag)}`,
};

/** One member the cluster-wide calls can go to: its endpoint and its token's secret. */
export type ClusterMember = { endpoint: PveEndpoint; secret: string };

/** How long a member probe may take: a silent node must not eat the battery. */
export const MEMBER_PROBE_TIMEOUT_MS = 2000;

/** A call that got no answer from this member: ask the next one. A 501 is an answer (no such path). */
function noAnswer(error: unknown): boolean {
  if (!(error instanceof ProxmoxUnavailableError)) return false;
  return error.status === undefined || (error.status >= 500 && error.status !== 501);
}

export class ClusterApi {
  private current = 0;
  /** Members that did not answer, with why (for the message when none does). */
  readonly silent = new Map<string, string>();

  constructor(
    private readonly members: readonly ClusterMember[],
    private readonly timeoutMs: number,
    /** Told whenever another member takes over (for the run's log). */
    private readonly onSwitch?: (from: string, to: string, why: string) => void,
  ) {
    if (members.length === 0) throw new Error("a cluster API needs at least one member");
  }

  /** The member asked now. */
  get endpoint(): PveEndpoint {
    return this.members[this.current]!.endpoint;
  }

  /** What this node's API is called in the log: its node name. */
  get node(): string {
    return this.endpoint.nodeName;
  }

  line(method: PinnedRequest["method"], path: string, form?: Form): string {
    return requestLine(this.endpoint, method, path, form);
  }

  disarmHa(): Promise<unknown> {
    return this.call("POST", paths.disarmHa, z.unknown(), { "resource-mode": "ignore" });
  }

  armHa(): Promise<unknown> {
    return this.call("POST", paths.armHa, z.unknown());
  }

  /** The fencing entry's armed-state, or null where HA has none (before 9.2). */
  async haArmedState(): Promise<string | null> {
    const entries = await this.call("GET", paths.haStatus, ZHaStatus);
    return entries.find((e) => e.type === "fencing")?.["armed-state"] ?? null;
  }

  /** Every guest the token may see (`VM.Audit`); Proxmox leaves the others out silently. */
  guests(): Promise<GuestResource[]> {
    return this.call("GET", paths.guests, z.array(ZGuestResource));
  }

  /**
   * Whether the token sees every guest: `VM.Audit` on `/vms` (granted there or above). Without
   * it Proxmox leaves guests out of every list without a word, so an empty list means nothing.
   */
  async seesAllGuests(): Promise<boolean> {
    return (await this.vmPrivileges()).has("VM.Audit");
  }

  /** The token's privileges on `/vms` (granted there or above; the key counts, not its value). */
  async vmPrivileges(): Promise<Set<string>> {
    const perms = await this.call(
      "GET",
      `/access/permissions?path=${encodeURIComponent("/vms")}`,
      z.record(z.string(), z.record(z.string(), z.unknown())),
    );
    return new Set(Object.keys(perms["/vms"] ?? {}));
  }

  /** Whether this Proxmox VE can disarm HA: the HA status index lists `disarm-ha` (9.2+). */
  async canDisarmHa(): Promise<boolean> {
    const index = await this.call(
      "GET",
      paths.haIndex,
      z.array(z.object({ name: z.string() }).loose()),
    );
    return index.some((entry) => entry.name === "disarm-ha");
  }

  /** How many HA resources the cluster has. */
  async haResourceCount(): Promise<number> {
    return (await this.call("GET", paths.haResources, z.array(z.unknown()))).length;
  }

  /** The form of a migration to `target`: a running VM live, a running container restarted. */
  static migrateForm(
    guest: Pick<GuestResource, "status"> & { type: GuestType },
    target: string,
  ): Form {
    const running = guest.status === "running";
    return guest.type === "qemu"
      ? { target, ...(running ? { online: "1" } : {}) }
      : { target, ...(running ? { restart: "1" } : {}) };
  }

  /** `POST /nodes/{node}/{type}/{vmid}/migrate`; returns the task's UPID. */
  migrate(
    guest: Pick<GuestResource, "node" | "vmid" | "status"> & { type: GuestType },
    target: string,
  ): Promise<string> {
    return this.call(
      "POST",
      paths.migrate(guest.node, guest.type, guest.vmid),
      z.string(),
      ClusterApi.migrateForm(guest, target),
    );
  }

  /** Returns the task's UPID. */
  bulkShutdown(form: Form): Promise<string> {
    return this.call("POST", paths.bulkShutdown, z.string(), form);
  }

  guestAction(
    guest: Pick<GuestResource, "node" | "vmid"> & { type: GuestType },
    action: "shutdown" | "stop",
    form?: Form,
  ): Promise<string> {
    return this.call(
      "POST",
      paths.guest(guest.node, guest.type, guest.vmid, action),
      z.string(),
      form,
    );
  }

  /** One node's own guests (`GET /nodes/{node}/qemu` and `/lxc`), as the resources list has them. */
  async nodeGuests(node: string): Promise<GuestResource[]> {
    const ZEntry = ZGuestResource.omit({ id: true, type: true, node: true });
    const list = async (type: GuestType) =>
      (await this.call("GET", `/nodes/${encodeURIComponent(node)}/${type}`, z.array(ZEntry))).map(
        (g) => ({ ...g, id: `${type}/${g.vmid}`, type, node }),
      );
    const [qemu, lxc] = await Promise.all([list("qemu"), list("lxc")]);
    return [...qemu, ...lxc];
  }

  /** A guest's config (its `startup` property among the rest). */
  guestConfig(
    guest: Pick<GuestResource, "node" | "vmid"> & { type: GuestType },
  ): Promise<Record<string, unknown>> {
    return this.call(
      "GET",
      paths.guestConfig(guest.node, guest.type, guest.vmid),
      z.record(z.string(), z.unknown()),
    );
  }

  /** A guest's status now (`status/current`): `running`, `stopped`, … */
  async guestStatus(
    guest: Pick<GuestResource, "node" | "vmid"> & { type: GuestType },
  ): Promise<string> {
    const current = await this.call(
      "GET",
      paths.guest(guest.node, guest.type, guest.vmid, "current"),
      z.object({ status: z.string() }).loose(),
    );
    return current.status;
  }

  /** `POST …/status/start`; returns the task's UPID. */
  startGuest(guest: Pick<GuestResource, "node" | "vmid"> & { type: GuestType }): Promise<string> {
    return this.call("POST", paths.guest(guest.node, guest.type, guest.vmid, "start"), z.string());
  }

  /** The HA resources' ids (`vm:101`, `ct:102`). */
  async haResourceIds(): Promise<Set<string>> {
    const resources = await this.call(
      "GET",
      paths.haResources,
      z.array(z.object({ sid: z.string() }).loose()),
    );
    return new Set(resources.map((r) => r.sid));
  }

  /** Quorum and which nodes the cluster counts online (`GET /cluster/status`). */
  async clusterStatus(): Promise<{ quorate: boolean | null; online: string[]; nodes: string[] }> {
    const entries = await this.call("GET", paths.clusterStatus, ZClusterStatus);
    const cluster = entries.find((e) => e.type === "cluster");
    const nodes = entries.filter((e) => e.type === "node" && e.name);
    return {
      quorate: cluster ? cluster.quorate === 1 : null,
      online: nodes.filter((n) => n.online === 1).map((n) => n.name!),
      nodes: nodes.map((n) => n.name!),
    };
  }

  /** Placement groups that are down or not active, by state (`GET /cluster/ceph/status`). */
  async inactivePgs(): Promise<{ state: string; count: number }[]> {
    const status = await this.call("GET", paths.cephStatus, ZCephPgs);
    return (status.pgmap?.pgs_by_state ?? [])
      .filter(
        (p) => p.count > 0 && (/\bdown\b/.test(p.state_name) || !/\bactive\b/.test(p.state_name)),
      )
      .map((p) => ({ state: p.state_name, count: p.count }));
  }

  taskStatus(node: string, upid: string): Promise<z.infer<typeof ZTaskStatus>> {
    return this.call("GET", paths.task(node, upid), ZTaskStatus);
  }

  /** The flags that are set. */
  async cephFlags(): Promise<Set<string>> {
    const flags = await this.call("GET", paths.cephFlags, ZCephFlags);
    return new Set(flags.filter((f) => f.value === 1).map((f) => f.name));
  }

  putCephFlags(flags: readonly string[], value: boolean): Promise<unknown> {
    return this.call(
      "PUT",
      paths.cephFlags,
      z.unknown(),
      Object.fromEntries(flags.map((f) => [f, value ? "1" : "0"])),
    );
  }

  putCephFlag(flag: string, value: boolean): Promise<unknown> {
    return this.call("PUT", paths.cephFlag(flag), z.unknown(), { value: value ? "1" : "0" });
  }

  private async call<S extends z.ZodType>(
    method: PinnedRequest["method"],
    path: string,
    schema: S,
    form?: Form,
  ): Promise<z.infer<S>> {
    for (;;) {
      const { endpoint, secret } = this.members[this.current]!;
      try {
        return await pinnedApiCall(
          {
            baseUrl: apiBaseUrl(endpoint.address, endpoint.apiPort),
            certSha256: endpoint.apiCertSha256,
            timeoutMs: this.timeoutMs,
          },
          {
            method,
            path,
            authorization: `PVEAPIToken=${endpoint.apiTokenId}=${secret}`,
            ...(form ? { form } : {}),
          },
          schema,
          `${method} ${path.split("?")[0]} on ${endpoint.nodeName}`,
        );
      } catch (error) {
        if (!noAnswer(error)) throw error;
        const why = error instanceof Error ? error.message : String(error);
        this.silent.set(endpoint.nodeName, why);
        if (!(await this.moveOn(why))) {
          throw new ProxmoxUnavailableError(
            `no member of the cluster answers its API: ${[...this.silent].map(([node, reason]) => `${node}: ${reason}`).join("; ")}`,
          );
        }
      }
    }
  }

  /** Moves to the next member (after the current one) that answers a probe; false: none does. */
  private async moveOn(why: string): Promise<boolean> {
    const from = this.endpoint.nodeName;
    for (let next = this.current + 1; next < this.members.length; next++) {
      const candidate = this.members[next]!.endpoint;
      if (this.silent.has(candidate.nodeName)) continue;
      const probe = await probeMember(candidate);
      if (!probe.answers) {
        this.silent.set(candidate.nodeName, probe.why);
        continue;
      }
      this.current = next;
      this.onSwitch?.(from, candidate.nodeName, why);
      return true;
    }
    return false;
  }
}

/** Whether a member's API answers at all (any HTTP answer over its pinned certificate). */
export function probeMember(endpoint: PveEndpoint) {
  return probeApi({
    baseUrl: apiBaseUrl(endpoint.address, endpoint.apiPort),
    certSha256: endpoint.apiCertSha256,
    timeoutMs: MEMBER_PROBE_TIMEOUT_MS,
  });
}

/** Unseals one member's token secret (`onSecret` gets it to mask). */
async function memberOf(
  db: Database,
  endpoint: PveEndpoint,
  onSecret?: (secret: string) => void,
): Promise<ClusterMember> {
  let secret = "";
  await proxmoxClientForHost(db, endpoint, {
    onSecret: (value) => {
      secret = value;
      onSecret?.(value);
    },
  });
  return { endpoint, secret };
}

/**
 * The cluster's API through the first of `endpoints` (in preference order) that answers a probe
 * now, the others behind it for when it stops answering. `trusted` names a member known to
 * have answered a moment ago: it is asked first without a probe. Null when none answers, with
 * each one's reason.
 */
export async function clusterApiOver(
  db: Database,
  endpoints: readonly PveEndpoint[],
  options: {
    timeoutMs: number;
    onSecret?: (secret: string) => void;
    onSwitch?: (from: string, to: string, why: string) => void;
    trusted?: string | null;
  },
): Promise<{ api: ClusterApi; skipped: string[] } | { api: null; why: string }> {
  const silent: string[] = [];
  const ordered = options.trusted
    ? [
        ...endpoints.filter((e) => e.nodeName === options.trusted),
        ...endpoints.filter((e) => e.nodeName !== options.trusted),
      ]
    : [...endpoints];
  for (const [i, endpoint] of ordered.entries()) {
    if (!(i === 0 && options.trusted === endpoint.nodeName)) {
      const probe = await probeMember(endpoint);
      if (!probe.answers) {
        silent.push(`${endpoint.nodeName}: ${probe.why}`);
        continue;
      }
    }
    const members = await Promise.all(
      ordered.slice(i).map((e) => memberOf(db, e, options.onSecret)),
    );
    return { api: new ClusterApi(members, options.timeoutMs, options.onSwitch), skipped: silent };
  }
  return {
    api: null,
    why:
      endpoints.length === 0
        ? "no node of the cluster has an API address, token and pin"
        : `no member of the cluster answers its API: ${silent.join("; ")}`,
  };
}

/** The API of one node with its token's secret unsealed (`onSecret` gets it to mask). */
export async function clusterApiFor(
  db: Database,
  endpoint: PveEndpoint,
  options: { timeoutMs: number; onSecret?: (secret: string) => void },
): Promise<ClusterApi> {
  return new ClusterApi([await memberOf(db, endpoint, options.onSecret)], options.timeoutMs);
}
