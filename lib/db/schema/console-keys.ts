import { sql } from "drizzle-orm";
import {
  index,
  pgEnum,
  pgTable,
  text,
  timestamp,
  uniqueIndex,
  uuid,
  primaryKey,
} from "drizzle-orm/pg-core";
import { credentials } from "./credentials";
import { hosts } from "./hosts";
import { runs } from "./runs";

/**
 * active: the key new hosts are given (exactly one, enforced by a partial unique index, so two
 * processes starting at once cannot both create one). retiring: replaced by a rotation, but
 * some host still logs in with it. retired: no host uses it; kept for the record.
 */
export const consoleKeyState = pgEnum("console_key_state", ["active", "retiring", "retired"]);

/** The console's own SSH key pairs. The private key is sealed with lib/secrets. */
export const consoleKeys = pgTable(
  "console_keys",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    /** `ssh-ed25519 AAAA… clupilot-console@<id>`: the exact authorized_keys line. */
    publicKey: text("public_key").notNull(),
    /** `SHA256:…` of the public key blob, as `ssh-keygen -lf` prints it. */
    fingerprint: text("fingerprint").notNull().unique(),
    /** AES-256-GCM envelope (lib/secrets) of the OpenSSH private key. */
    sealedPrivateKey: text("sealed_private_key").notNull(),
    state: consoleKeyState("state").notNull(),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    activatedAt: timestamp("activated_at", { withTimezone: true }).notNull().defaultNow(),
    retiredAt: timestamp("retired_at", { withTimezone: true }),
  },
  (t) => [
    uniqueIndex("console_keys_one_active")
      .on(t.state)
      .where(sql`${t.state} = 'active'`),
  ],
);

/**
 * Which console key a `console_key` credential logs in with: the key proven on that host. A
 * rotation moves the row to the new key only after a connection with the new key succeeded.
 */
export const consoleKeyCredentials = pgTable(
  "console_key_credentials",
  {
    credentialId: uuid("credential_id")
      .primaryKey()
      .references(() => credentials.id, { onDelete: "cascade" }),
    consoleKeyId: uuid("console_key_id")
      .notNull()
      .references(() => consoleKeys.id),
    assignedAt: timestamp("assigned_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index("console_key_credentials_key_idx").on(t.consoleKeyId)],
);

/** What a rotation did on one host. */
export const consoleKeyRotationOutcome = pgEnum("console_key_rotation_outcome", [
  "pending",
  "switched",
  "new_key_refused",
  "unreachable",
]);

/** One key rotation: run by the `rotate-console-key` pipeline (one run, hosts one per visit). */
export const consoleKeyRotations = pgTable("console_key_rotations", {
  id: uuid("id").primaryKey().defaultRandom(),
  runId: uuid("run_id")
    .notNull()
    .unique()
    .references(() => runs.id),
  fromKeyId: uuid("from_key_id")
    .notNull()
    .references(() => consoleKeys.id),
  toKeyId: uuid("to_key_id")
    .notNull()
    .references(() => consoleKeys.id),
  startedBy: text("started_by").notNull(),
  startedAt: timestamp("started_at", { withTimezone: true }).notNull().defaultNow(),
  finishedAt: timestamp("finished_at", { withTimezone: true }),
});

/** Per-host progress and outcome of a rotation, shown live. */
export const consoleKeyRotationHosts = pgTable(
  "console_key_rotation_hosts",
  {
    rotationId: uuid("rotation_id")
      .notNull()
      .references(() => consoleKeyRotations.id, { onDelete: "cascade" }),
    hostId: uuid("host_id")
      .notNull()
      .references(() => hosts.id, { onDelete: "cascade" }),
    /** The name at rotation time, so the report reads the same after a rename. */
    hostName: text("host_name").notNull(),
    outcome: consoleKeyRotationOutcome("outcome").notNull().default("pending"),
    /** What happened, in words an operator can act on (why refused or unreachable). */
    detail: text("detail"),
    updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.rotationId, t.hostId] })],
);
