import { pgTable, uuid, text, integer, timestamp, pgEnum } from "drizzle-orm/pg-core";
import { credentials } from "./credentials";

export const hostState = pgEnum("host_state", ["onboarding", "failed", "active"]);

export const hosts = pgTable("hosts", {
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
  state: hostState("state").notNull().default("onboarding"),
  createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
  updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
});
