import { z } from "zod";
import { configIsTemplate } from "./is-template";
import { pinnedApiCall, type PinnedRequest } from "./pinned-https";
import {
  ZClusterOptions,
  ZClusterVmResources,
  ZClusterStatus,
  ZNodeList,
  ZNodeStatus,
  ZPermissions,
  ZStorageConfigList,
  ZStorageStatusList,
  ZVersion,
  ZVmConfig,
  ZVmList,
} from "./schemas";

export type ProxmoxTarget = {
  /** e.g. `https://10.0.0.5:8006` */
  baseUrl: string;
  node: string;
  /** `user@realm!tokenid` */
  tokenId: string;
  tokenSecret: string;
  /** SHA-256 of the DER certificate, `AB:CD:…` (openssl/Proxmox style); case and colons ignored. */
  certSha256: string;
  timeoutMs?: number;
};

/** Every request the client can send, as `METHOD path-template`; a test checks them against Proxmox's schema. */
export const PROXMOX_REQUESTS = [
  "GET /version",
  "GET /nodes/{node}/qemu",
  "GET /nodes/{node}/qemu/{vmid}/config",
  "GET /access/permissions",
  "GET /cluster/status",
  "GET /cluster/options",
  "GET /nodes",
  "GET /nodes/{node}/status",
  "GET /nodes/{node}/storage",
  "POST /nodes/{node}/status",
  "GET /storage",
  "GET /nodes/{node}/lxc/{vmid}/config",
  "GET /nodes/{node}/config",
  "POST /nodes/{node}/wakeonlan",
] as const;

/** The path a node's shutdown is posted to: its own `/nodes/{node}/status`. */
export function pveShutdownPath(node: string): string {
  return `/nodes/${encodeURIComponent(node)}/status`;
}

export class ProxmoxClient {
  constructor(private readonly target: ProxmoxTarget) {}

  /** The node this client asks about (`/nodes/{node}/…`). */
  get node(): string {
    return this.target.node;
  }

  /** `GET /version`. */
  version() {
    return this.get("/version", ZVersion);
  }

  /** `GET /nodes`: the cluster's nodes by the names Proxmox uses in every `/nodes/{node}` path. */
  nodes() {
    return this.get("/nodes", ZNodeList);
  }

  /** `GET /nodes/{node}/status`: CPU, memory, kernel, version (needs `Sys.Audit`). */
  nodeStatus() {
    return this.get(`/nodes/${encodeURIComponent(this.target.node)}/status`, ZNodeStatus);
  }

  /**
   * `GET /nodes/{node}/storage?content=images`: the enabled storages that accept VM disk images
   * (and that the token may see).
   */
  imageStorages() {
    return this.get(
      `/nodes/${encodeURIComponent(this.target.node)}/storage?content=images`,
      ZStorageStatusList,
    );
  }

  /** VMs the token may see (`VM.Audit`); others are silently left out by Proxmox. */
  listVms() {
    return this.get(`/nodes/${encodeURIComponent(this.target.node)}/qemu`, ZVmList);
  }

  vmConfig(vmid: number) {
    return this.get(
      `/nodes/${encodeURIComponent(this.target.node)}/qemu/${vmid}/config`,
      ZVmConfig,
    );
  }

  /** `GET /nodes/{node}/{qemu|lxc}/{vmid}/config`: a guest's config on this node (`VM.Audit`). */
  guestConfig(type: "qemu" | "lxc", vmid: number) {
    return this.get(
      `/nodes/${encodeURIComponent(this.target.node)}/${type}/${vmid}/config`,
      ZVmConfig,
    );
  }

  /**
   * `GET /storage`: the datacenter's storage definitions the token may audit; Proxmox leaves
   * the others out silently, so a storage missing here is unknown, not absent.
   */
  storageConfigs() {
    return this.get("/storage", ZStorageConfigList);
  }

  /**
   * `GET /access/permissions`: the token's own effective privileges, or with `userid` another
   * subject's (the token's own user may be asked without `Sys.Audit` on `/access`).
   */
  permissions(path?: string, userid?: string) {
    const query = new URLSearchParams({
      ...(path === undefined ? {} : { path }),
      ...(userid === undefined ? {} : { userid }),
    }).toString();
    return this.get(`/access/permissions${query ? `?${query}` : ""}`, ZPermissions);
  }

  /**
   * `GET /cluster/status` (needs `Sys.Audit` on `/`): a `cluster` entry when clustered, and one
   * entry per node, `local: 1` on the node that answered.
   */
  clusterStatus() {
    return this.get("/cluster/status", ZClusterStatus);
  }

  /** `GET /cluster/options` (needs `Sys.Audit` on `/`): `ha.shutdown_policy` among them. */
  clusterOptions() {
    return this.get("/cluster/options", ZClusterOptions);
  }

  /**
   * Whether `vmid` is a usable template. Only a successful VM list proves absence (→ false);
   * the config of a missing VM is HTTP 500, the same as a node in trouble, so it cannot.
   * Any failure throws: the caller's retry path keeps an existing template alive.
   */
  async isTemplate(vmid: number): Promise<boolean> {
    const list = await this.listVms();
    if (!list.some((vm) => vm.vmid === vmid)) {
      // A VMID is the cluster's: another member's template is this node's too (issue 31).
      const elsewhere = await this.clusterGuest(vmid);
      return elsewhere !== null && elsewhere.node !== this.target.node && elsewhere.template;
    }
    return configIsTemplate(await this.vmConfig(vmid));
  }

  /**
   * Which node of the cluster holds `vmid` and whether Proxmox flags it a template
   * (`GET /cluster/resources?type=vm`, `VM.Audit`); null when no node does. On a standalone
   * node the node's own guests.
   */
  async clusterGuest(vmid: number): Promise<{ node: string; template: boolean } | null> {
    const guests = await this.get("/cluster/resources?type=vm", ZClusterVmResources);
    const guest = guests.find((g) => g.vmid === vmid);
    return guest ? { node: guest.node, template: guest.template === 1 } : null;
  }

  /**
   * `POST /nodes/{node}/status command=shutdown` (needs `Sys.PowerMgmt` on `/nodes/{node}`), to
   * this node's own address: Proxmox answers null at once and powers off about two seconds
   * later (`sleep 2; poweroff`), stopping its guests on the way.
   */
  async shutdownNode(): Promise<void> {
    await this.call(
      { method: "POST", path: pveShutdownPath(this.target.node), form: { command: "shutdown" } },
      z.null(),
    );
  }

  /**
   * `GET /nodes/{node}/config?property=wakeonlan` (`Sys.Audit` on `/`; proxied to `node`, which
   * must be up): the node's own Wake-on-LAN setting, as in /etc/pve/nodes/<node>/config —
   * `mac=aa:bb:…[,bind-interface=…][,broadcast-address=…]` — or undefined when not set.
   */
  async wakeOnLanConfig(node: string): Promise<string | undefined> {
    const config = await this.get(
      `/nodes/${encodeURIComponent(node)}/config?property=wakeonlan`,
      z.object({ wakeonlan: z.string().optional() }).loose(),
    );
    return config.wakeonlan;
  }

  /**
   * `POST /nodes/{node}/wakeonlan` (`Sys.PowerMgmt` on `/nodes/{node}`), asked of this client's
   * node, which is not `node`: Proxmox does not proxy it — the node that handles the request
   * sends the magic packet for the MAC in `node`'s config, to its own `broadcast-address`
   * (255.255.255.255 by default) on UDP 9. Answers the MAC it sent for.
   */
  wakeOnLan(node: string): Promise<string> {
    return this.call(
      { method: "POST", path: `/nodes/${encodeURIComponent(node)}/wakeonlan` },
      z.string(),
    );
  }

  private get<S extends z.ZodType>(path: string, schema: S): Promise<z.infer<S>> {
    return this.call({ method: "GET", path }, schema);
  }

  private call<S extends z.ZodType>(
    request: Omit<PinnedRequest, "authorization">,
    schema: S,
  ): Promise<z.infer<S>> {
    return pinnedApiCall(
      this.target,
      {
        ...request,
        authorization: `PVEAPIToken=${this.target.tokenId}=${this.target.tokenSecret}`,
      },
      schema,
      `${request.method} ${request.path} on ${this.target.node}`,
    );
  }
}
