import { eq } from "drizzle-orm";
import { z } from "zod";
import type { Database } from "@/lib/db/client";
import { credentials, type hosts } from "@/lib/db/schema";
import { HostApiNotReadyError } from "@/lib/host-access/proxmox-client";
import { ProxmoxUnavailableError } from "@/lib/proxmox/errors";
import { pinnedApiCall } from "@/lib/proxmox/pinned-https";
import { unseal } from "@/lib/secrets/seal";
import { apiBaseUrl } from "@/lib/proxmox/pinned-https";

/**
 * What discovery asks a host's Proxmox API, with the host's token over its pinned certificate.
 * Every failure to get a clean answer throws; only an answer says "standalone" or "no Ceph".
 */

/** Every request discovery sends; a test checks them against Proxmox's published schema. */
export const CLUSTER_DISCOVERY_REQUESTS = [
  "GET /cluster/status",
  "GET /cluster/config/join",
  "GET /cluster/ceph/status",
  "GET /cluster/resources",
] as const;

const ZFlag = z.coerce.number().optional();

const ZClusterStatus = z.array(
  z
    .object({
      type: z.string(),
      name: z.string(),
      quorate: ZFlag,
      online: ZFlag,
      local: ZFlag,
      ip: z.string().optional(),
      nodeid: z.coerce.number().optional(),
    })
    .loose(),
);

/**
 * `GET /cluster/config/join`: corosync.conf's nodelist with each node's `pve_fp` (the
 * fingerprint of the certificate its pveproxy serves from pmxcfs). Proxmox hands corosync.conf's
 * values through as text, so the numbers may come as strings.
 */
const ZJoinInfo = z
  .object({
    nodelist: z.array(
      z
        .object({
          name: z.string(),
          nodeid: z.coerce.number().optional(),
          pve_fp: z.string().optional(),
          pve_addr: z.string().optional(),
        })
        .loose(),
    ),
    config_digest: z.string().optional(),
  })
  .loose();

const ZCephStatus = z
  .object({ monmap: z.object({ mons: z.array(z.object({ name: z.string() }).loose()) }).loose() })
  .loose();

export type ClusterAnswer =
  | { kind: "standalone" }
  | {
      kind: "cluster";
      name: string;
      quorate: boolean | null;
      /** The node that answered (marked `local`); null when the answer did not say. */
      local: string | null;
      nodes: { name: string; ip: string | null; online: boolean | null; nodeid: number | null }[];
    };

/** The cluster's configuration as one member reads it from pmxcfs. */
export type JoinAnswer = {
  nodes: {
    name: string;
    nodeid: number | null;
    /** `AB:CD:…`; null when Proxmox did not say. */
    fingerprint: string | null;
  }[];
  /** SHA-1 of corosync.conf: equal on every member, and on two clusters set up alike. */
  digest: string | null;
};

export type CephAnswer = { kind: "none"; reason: string } | { kind: "ceph"; monitors: string[] };

/** `GET /cluster/resources?type=vm`: what the budget's rounds of guest stops count. */
const ZGuests = z.array(
  z
    .object({
      node: z.string(),
      status: z.string(),
      template: z.coerce.number().optional(),
    })
    .loose(),
);

type HostApiRecord = Pick<
  typeof hosts.$inferSelect,
  | "name"
  | "address"
  | "apiPort"
  | "nodeName"
  | "apiCertSha256"
  | "apiTokenId"
  | "apiTokenCredentialId"
>;

export type HostApi = {
  clusterStatus(): Promise<ClusterAnswer>;
  /** Only for a member of a cluster: a standalone node has no join info. */
  joinInfo(): Promise<JoinAnswer>;
  ceph(): Promise<CephAnswer>;
  /**
   * Running guests (not templates) per node, as the token sees them: the shutdown's budget
   * counts rounds of guest stops from them. A token without VM.Audit sees fewer: a low count.
   */
  runningGuests(): Promise<Map<string, number>>;
};

const flag = (value: number | undefined): boolean | null =>
  value === undefined ? null : value === 1;

/**
 * Proxmox answers 500 when Ceph is not installed or not set up on the cluster; those messages
 * mean "no Ceph". Any other failure (timeout, 403, another 500) means it could not be asked.
 */
const CEPH_ABSENT =
  /binary not installed|not initialized|not configured|rados_connect failed - No such file/i;

export function cephAbsentReason(error: unknown): string | null {
  return error instanceof ProxmoxUnavailableError &&
    error.status === 500 &&
    CEPH_ABSENT.test(error.message)
    ? error.message
    : null;
}

export async function hostApi(
  db: Pick<Database, "select">,
  host: HostApiRecord,
  timeoutMs = 10_000,
): Promise<HostApi> {
  const { nodeName, apiCertSha256, apiTokenId, apiTokenCredentialId } = host;
  if (!nodeName || !apiCertSha256 || !apiTokenId || !apiTokenCredentialId) {
    throw new HostApiNotReadyError(
      `host ${host.name} has no Proxmox API token or certificate pin yet; finish its onboarding`,
    );
  }
  const [credential] = await db
    .select({ sealed: credentials.sealed })
    .from(credentials)
    .where(eq(credentials.id, apiTokenCredentialId));
  if (!credential) {
    throw new HostApiNotReadyError(
      `host ${host.name}'s API token secret is missing; run its onboarding again`,
    );
  }
  const authorization = `PVEAPIToken=${apiTokenId}=${unseal(credential.sealed)}`;
  const endpoint = {
    baseUrl: apiBaseUrl(host.address, host.apiPort),
    certSha256: apiCertSha256,
    timeoutMs,
  };
  const get = <S extends z.ZodType>(path: string, schema: S) =>
    pinnedApiCall(
      endpoint,
      { method: "GET", path, authorization },
      schema,
      `GET ${path} on ${host.name}`,
    );
  return {
    async clusterStatus() {
      const rows = await get("/cluster/status", ZClusterStatus);
      const cluster = rows.find((row) => row.type === "cluster");
      if (!cluster) return { kind: "standalone" };
      return {
        kind: "cluster",
        name: cluster.name,
        quorate: flag(cluster.quorate),
        local: rows.find((row) => row.type === "node" && row.local === 1)?.name ?? null,
        nodes: rows
          .filter((row) => row.type === "node")
          .map((row) => ({
            name: row.name,
            ip: row.ip ?? null,
            online: flag(row.online),
            nodeid: row.nodeid ?? null,
          })),
      };
    },
    async joinInfo() {
      const info = await get("/cluster/config/join", ZJoinInfo);
      return {
        nodes: info.nodelist.map((n) => ({
          name: n.name,
          nodeid: n.nodeid ?? null,
          fingerprint: n.pve_fp ?? null,
        })),
        digest: info.config_digest ?? null,
      };
    },
    async runningGuests() {
      const guests = await get("/cluster/resources?type=vm", ZGuests);
      const running = new Map<string, number>();
      for (const guest of guests) {
        if (guest.status !== "running" || guest.template === 1) continue;
        running.set(guest.node, (running.get(guest.node) ?? 0) + 1);
      }
      return running;
    },
    async ceph() {
      try {
        const status = await get("/cluster/ceph/status", ZCephStatus);
        return { kind: "ceph", monitors: status.monmap.mons.map((mon) => mon.name) };
      } catch (error) {
        const absent = cephAbsentReason(error);
        if (absent !== null) return { kind: "none", reason: absent };
        throw error;
      }
    },
  };
}
