import { pgTable, uuid, text, integer, timestamp } from "drizzle-orm/pg-core";
import { credentials } from "./credentials";

/**
 * A machine the console manages. Its state (onboarding, failed, active) is derived from its latest
 * run, never stored twice.
 */
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
  createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
  updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
});
