import { sql } from "drizzle-orm";
import { check, integer, pgEnum, pgTable, text, timestamp, uuid } from "drizzle-orm/pg-core";
import { hosts } from "./hosts";
import { powerTargets } from "./power";

/**
 * How the console switches a host on out of band (lib/power-controllers). `pve-wol`: Proxmox's
 * own `POST /nodes/{node}/wakeonlan`, sent through another member of the host's cluster.
 */
export const powerControllerKind = pgEnum("power_controller_kind", [
  "redfish",
  "ipmi",
  "wol",
  "pve-wol",
]);

/**
 * The one out-of-band power controller of an onboarded host or of a backup server (a power
 * target of kind `pbs`, which has no host row): exactly one of `host_id` and `target_id` is set.
 * A controller on a pve-node target is not a thing: that host's controller hangs on its host
 * (lib/power-controllers/store.ts refuses it). Its BMC (Redfish or IPMI over LAN) or the
 * Wake-on-LAN packet that wakes it. `sealed_secret` is a lib/secrets envelope of a JSON object
 * (`{ "password": … }`; `{}` for Wake-on-LAN): the password never reaches a log or the browser.
 */
export const powerControllers = pgTable(
  "power_controllers",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    hostId: uuid("host_id")
      .unique()
      .references(() => hosts.id, { onDelete: "cascade" }),
    /** A backup server's controller: its power target (kind `pbs`). Deleting the target ends it. */
    targetId: uuid("target_id")
      .unique()
      .references(() => powerTargets.id, { onDelete: "cascade" }),
    kind: powerControllerKind("kind").notNull(),
    /** redfish, ipmi: the BMC's address (IP or DNS name). */
    address: text("address"),
    /** redfish: HTTPS port (443); ipmi: RMCP+ UDP port (623); wol: UDP port (9). */
    port: integer("port").notNull(),
    /** redfish, ipmi: the BMC user. */
    username: text("username"),
    /** redfish: the ComputerSystem's id below /redfish/v1/Systems (e.g. `1`, `System.Embedded.1`). */
    systemId: text("system_id"),
    /**
     * redfish: `basic` (basic auth on every request) or `session` (a SessionService session per
     * use: `X-Auth-Token`, deleted when done). Null for the other kinds.
     */
    redfishAuth: text("redfish_auth", { enum: ["basic", "session"] }),
    /**
     * redfish: SHA-256 of the BMC's TLS certificate (`AB:CD:…`), pinned at first contact; null
     * until then. Changing the address or port forgets it.
     */
    certSha256: text("cert_sha256"),
    certPinnedAt: timestamp("cert_pinned_at", { withTimezone: true }),
    /** wol: the host's MAC (`aa:bb:cc:dd:ee:ff`) and the broadcast address the packet goes to. */
    mac: text("mac"),
    broadcastAddress: text("broadcast_address"),
    sealedSecret: text("sealed_secret").notNull(),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    check("power_controllers_one_owner", sql`(${t.hostId} is null) <> (${t.targetId} is null)`),
    check(
      "power_controllers_kind_fields",
      sql`(${t.kind} in ('redfish', 'ipmi') and ${t.address} is not null and ${t.username} is not null
            and (${t.kind} = 'ipmi' or ${t.systemId} is not null))
        or (${t.kind} = 'wol' and ${t.mac} is not null and ${t.broadcastAddress} is not null)
        or ${t.kind}::text = 'pve-wol'`,
    ),
    // Compared as text: a new enum value cannot be used in the transaction that adds it.
    check(
      "power_controllers_redfish_auth",
      sql`(${t.kind}::text = 'redfish') = (${t.redfishAuth} is not null)
        and (${t.redfishAuth} is null or ${t.redfishAuth} in ('basic', 'session'))`,
    ),
  ],
);
