import { z } from "zod";
import type { Database } from "@/lib/db/client";
import { proxmoxClientForHost } from "@/lib/host-access/proxmox-client";
import { ProxmoxUnavailableError } from "@/lib/proxmox/errors";
import { pinnedApiCall, type PinnedRequest } from "@/lib/proxmox/pinned-https";
import type { PveEndpoint } from "@/lib/power/targets/load-targets";
import { apiBaseUrl } from "@/lib/power/targets/shutdown-call";

/**
 * The cluster-wide calls of the shutdown sequence and of restore, to one node's API with that
 * node's token over its pinned certificate (pmxcfs gives every member the same view, and
 * Proxmox proxies `/nodes/{other}/…` to the node named). Every failure to get a clean answer
 * throws; only an answer says something is absent.
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
  })
  .loose();
export type GuestResource = z.infer<typeof ZGuestResource>;

const ZCephFlags = z.array(z.object({ name: z.string(), value: ZFlag }).loose());

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
  guest: (node: string, type: GuestType, vmid: number, action: "shutdown" | "stop") =>
    `/nodes/${encodeURIComponent(node)}/${type}/${vmid}/status/${action}`,
  migrate: (node: string, type: GuestType, vmid: number) =>
    `/nodes/${encodeURIComponent(node)}/${type}/${vmid}/migrate`,
  haIndex: "/cluster/ha/status",
  haResources: "/cluster/ha/resources",
  task: (node: string, upid: string) =>
    `/nodes/${encodeURIComponent(node)}/tasks/${encodeURIComponent(upid)}/status`,
  cephFlags: "/cluster/ceph/flags",
  cephFlag: (flag: string) => `/cluster/ceph/flags/${encodeURIComponent(flag)}`,
};

export class ClusterApi {
  constructor(
    readonly endpoint: PveEndpoint,
    private readonly secret: string,
    private readonly timeoutMs: number,
  ) {}

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

  private call<S extends z.ZodType>(
    method: PinnedRequest["method"],
    path: string,
    schema: S,
    form?: Form,
  ): Promise<z.infer<S>> {
    return pinnedApiCall(
      {
        baseUrl: apiBaseUrl(this.endpoint.address, this.endpoint.apiPort),
        certSha256: this.endpoint.apiCertSha256,
        timeoutMs: this.timeoutMs,
      },
      {
        method,
        path,
        authorization: `PVEAPIToken=${this.endpoint.apiTokenId}=${this.secret}`,
        ...(form ? { form } : {}),
      },
      schema,
      `${method} ${path.split("?")[0]} on ${this.endpoint.nodeName}`,
    );
  }
}

/** The API of one node with its token's secret unsealed (`onSecret` gets it to mask). */
export async function clusterApiFor(
  db: Database,
  endpoint: PveEndpoint,
  options: { timeoutMs: number; onSecret?: (secret: string) => void },
): Promise<ClusterApi> {
  let secret = "";
  await proxmoxClientForHost(
    db,
    {
      address: endpoint.address,
      apiPort: endpoint.apiPort,
      nodeName: endpoint.nodeName,
      apiCertSha256: endpoint.apiCertSha256,
      apiTokenId: endpoint.apiTokenId,
      apiTokenCredentialId: endpoint.apiTokenCredentialId,
    },
    {
      onSecret: (value) => {
        secret = value;
        options.onSecret?.(value);
      },
    },
  );
  return new ClusterApi(endpoint, secret, options.timeoutMs);
}
