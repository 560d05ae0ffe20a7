import { pgTable, uuid, text, timestamp, pgEnum } from "drizzle-orm/pg-core";

export const credentialKind = pgEnum("credential_kind", [
  "password",
  "private_key",
  "api_token",
  // The host logs in with the console's own key (lib/console-key): no secret of its own, the key
  // in use is recorded in console_key_credentials.
  "console_key",
  // A UPS source's secrets (NUT password, SNMP community or v3 keys) as sealed JSON.
  "ups_secret",
  // A host's Proxmox VE subscription key (issue 31, item 6): applied on the host, never shown.
  "subscription_key",
]);

/**
 * A secret the console uses to reach a host. `sealed` is the AES-256-GCM envelope produced by
 * lib/secrets; the plaintext never reaches the database, a log line or the browser.
 */
export const credentials = pgTable("credentials", {
  id: uuid("id").primaryKey().defaultRandom(),
  kind: credentialKind("kind").notNull(),
  sealed: text("sealed").notNull(),
  createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
});
