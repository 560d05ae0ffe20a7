import { boolean, jsonb, pgEnum, pgTable, text, timestamp, uuid } from "drizzle-orm/pg-core";
import type { ConsolidateSettings } from "@/lib/power/clusters/schemas";
import type { ClusterMembership } from "@/lib/power/clusters/membership-evidence";
import type { ConsolidateCheck } from "@/lib/power/clusters/consolidation-check";
import { hosts } from "./hosts";

/**
 * How a cluster goes down on a power event: as one unit (HA disarmed, every guest stopped, Ceph
 * flagged, nodes in order), each host on its own, or consolidated onto one node first (never on
 * hyper-converged Ceph).
 */
export const powerClusterPolicy = pgEnum("power_cluster_policy", [
  "cluster",
  "whole-cluster",
  "per-host",
  "consolidate",
]);

/** One member as the cluster last reported it (`GET /cluster/status`, Ceph's monmap). */
export type ClusterNodeRecord = {
  name: string;
  ip: string | null;
  /** null: the cluster's answer did not say. */
  online: boolean | null;
  nodeid: number | null;
  cephMon: boolean;
  /** Its certificate as the cluster's configuration names it (`pve_fp`); absent: not read. */
  fingerprint?: string | null;
  /** Guests running on it at the last refresh (`/cluster/resources`); absent: not known. */
  runningGuests?: number | null;
};

/**
 * A Proxmox VE cluster some onboarded hosts belong to, as their APIs last reported it. A failed
 * read never changes what is known: it sets `refresh_error` and leaves the rest as it was. Its
 * name is no identity (two sites may share it): the row is the cluster its member hosts were
 * found to be by their certificates (lib/power/clusters/membership-evidence.ts).
 */
export const powerClusters = pgTable("power_clusters", {
  id: uuid("id").primaryKey().defaultRandom(),
  /** The cluster's name (`GET /cluster/status`, type=cluster); another cluster may share it. */
  name: text("name").notNull(),
  policy: powerClusterPolicy("policy").notNull().default("cluster"),
  /** Ceph answered with monitors; kept as last known when Ceph could not be asked. */
  hyperConverged: boolean("hyper_converged").notNull().default(false),
  /** null: never known. */
  quorate: boolean("quorate"),
  /**
   * Policy `consolidate`: mode, the node that stays, the first threshold (zod:
   * ZConsolidateSettings; null until an admin sets them: the defaults apply).
   */
  consolidate: jsonb("consolidate").$type<ConsolidateSettings>(),
  /** The last check whether consolidating can work (lib/power/clusters/consolidation-check.ts); null: never. */
  consolidateCheck: jsonb("consolidate_check").$type<ConsolidateCheck>(),
  nodes: jsonb("nodes").$type<ClusterNodeRecord[]>().notNull().default([]),
  /**
   * How the last refresh knew which hosts are this cluster's, and the other clusters of the same
   * name it told apart or could not; null: judged before this was kept.
   */
  membership: jsonb("membership").$type<ClusterMembership>(),
  /** When a member last answered `GET /cluster/status`. */
  refreshedAt: timestamp("refreshed_at", { withTimezone: true }),
  /** Why the last refresh could not ask (no member answered, or Ceph did not); null when it did. */
  refreshError: text("refresh_error"),
  createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
  updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
});

/**
 * What each active Proxmox VE host last said about its own membership: a cluster, or standalone
 * (`cluster_id` null with `checked_at` set). A host that could not be asked keeps its last answer
 * and gets `ask_error`.
 */
export const powerClusterMemberships = pgTable("power_cluster_memberships", {
  hostId: uuid("host_id")
    .primaryKey()
    .references(() => hosts.id, { onDelete: "cascade" }),
  clusterId: uuid("cluster_id").references(() => powerClusters.id, { onDelete: "set null" }),
  /** When the host last answered; null: never. */
  checkedAt: timestamp("checked_at", { withTimezone: true }),
  askError: text("ask_error"),
  askedAt: timestamp("asked_at", { withTimezone: true }).notNull().defaultNow(),
});
