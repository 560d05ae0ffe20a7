import { sql } from "drizzle-orm";
import {
  check,
  pgTable,
  uuid,
  text,
  integer,
  timestamp,
  type AnyPgColumn,
} from "drizzle-orm/pg-core";
import { credentials } from "./credentials";

/**
 * A machine the console manages. Its state (onboarding, failed, active, decommissioning) is
 * derived from its latest run, never stored twice; `retired` from `retired_at`.
 */
export const hosts = pgTable(
  "hosts",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    name: text("name").notNull().unique(),
    address: text("address").notNull(),
    sshPort: integer("ssh_port").notNull().default(22),
    sshUser: text("ssh_user").notNull(),
    credentialId: uuid("credential_id")
      .notNull()
      .references(() => credentials.id),
    /** OpenSSH-style `SHA256:<base64>` of the host key pinned on first contact. */
    hostKeySha256: text("host_key_sha256"),
    hostKeyPinnedAt: timestamp("host_key_pinned_at", { withTimezone: true }),
    /** The Proxmox node name, exactly as `GET /nodes` reports it (VerifyProxmoxApi checks it). */
    nodeName: text("node_name"),
    apiPort: integer("api_port").notNull().default(8006),
    /**
     * SHA-256 of the API's TLS certificate (`AB:CD:…`), read from the host over the pinned SSH
     * connection, so the API's trust derives from the SSH pin rather than a second first contact.
     */
    apiCertSha256: text("api_cert_sha256"),
    /** `user@realm!tokenid` of the console's API token; its secret is a sealed credential. */
    apiTokenId: text("api_token_id"),
    apiTokenCredentialId: uuid("api_token_credential_id").references(() => credentials.id),
    /** What RegisterCapacity recorded; a host whose image capacity is 0 is never active. */
    capacityCores: integer("capacity_cores"),
    capacityMemoryMib: integer("capacity_memory_mib"),
    capacityImageStorageGib: integer("capacity_image_storage_gib"),
    capacityRegisteredAt: timestamp("capacity_registered_at", { withTimezone: true }),
    /** Set by the periodic pre-sale VmTemplateCheck when a required template is missing. */
    templateCheckFailure: text("template_check_failure"),
    templateCheckedAt: timestamp("template_checked_at", { withTimezone: true }),
    /**
     * Set by the decommission pipeline's last step. A retired host gets no new runs and no
     * template checks; its runs, logs and events stay readable until an admin deletes it.
     */
    retiredAt: timestamp("retired_at", { withTimezone: true }),
    /**
     * What onboarding does about a cluster (issue 31): `none` (standalone), `create` (a new
     * cluster named `cluster_name` on this host), `join` (the cluster of `cluster_member_host_id`).
     * `cluster_link0` is the host's own address corosync uses. `cluster_name` of a joining host is
     * what the join read back.
     */
    clusterMode: text("cluster_mode", { enum: ["none", "create", "join"] })
      .notNull()
      .default("none"),
    clusterName: text("cluster_name"),
    clusterLink0: text("cluster_link0"),
    clusterMemberHostId: uuid("cluster_member_host_id").references((): AnyPgColumn => hosts.id, {
      onDelete: "set null",
    }),
    /**
     * The host's Proxmox VE subscription key, sealed (ApplySubscription applies it and switches
     * the host to the enterprise repository); null = no subscription, the no-subscription
     * repository as before. The key itself never leaves the credentials table but to the host.
     */
    subscriptionKeyCredentialId: uuid("subscription_key_credential_id").references(
      () => credentials.id,
    ),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    check(
      "hosts_cluster_mode",
      sql`(${t.clusterMode} = 'none' and ${t.clusterLink0} is null and ${t.clusterMemberHostId} is null)
      or (${t.clusterMode} = 'create' and ${t.clusterName} is not null and ${t.clusterLink0} is not null)
      or (${t.clusterMode} = 'join' and ${t.clusterLink0} is not null)`,
    ),
  ],
);
