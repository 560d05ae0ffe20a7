import { sql } from "drizzle-orm";
import {
  bigserial,
  boolean,
  index,
  pgEnum,
  pgTable,
  text,
  timestamp,
  uniqueIndex,
  uuid,
} from "drizzle-orm/pg-core";
import { ROLES } from "@/lib/roles";

export const userRole = pgEnum("user_role", ROLES);

/**
 * A person (or automation account) who signs in. Names are unique case-insensitively, so
 * "Alice" and "alice" cannot be two accounts an operator confuses at 3 a.m. Users are disabled,
 * never deleted: audit rows and runs keep naming them.
 */
export const users = pgTable(
  "users",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    name: text("name").notNull(),
    role: userRole("role").notNull(),
    /** Argon2id PHC string (`$argon2id$v=19$m=…`): parameters travel with the hash. */
    passwordHash: text("password_hash").notNull(),
    disabled: boolean("disabled").notNull().default(false),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [uniqueIndex("users_name_lower_idx").on(sql`lower(${t.name})`)],
);

/**
 * A browser session. The cookie carries a random token; only its SHA-256 is stored, so a
 * database dump signs nobody in. Ends at `expires_at` (absolute) or after the idle timeout
 * counted from `last_seen_at`.
 */
export const sessions = pgTable(
  "sessions",
  {
    /** Hex SHA-256 of the session token. */
    id: text("id").primaryKey(),
    userId: uuid("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    expiresAt: timestamp("expires_at", { withTimezone: true }).notNull(),
    lastSeenAt: timestamp("last_seen_at", { withTimezone: true }).notNull().defaultNow(),
    /** Where the sign-in came from (the address the rate limit counts), for the owner's list. */
    address: text("address"),
    /** The signing-in browser's User-Agent (cut to 300 characters), for the owner's list. */
    userAgent: text("user_agent"),
  },
  (t) => [index("sessions_user_idx").on(t.userId)],
);

/**
 * A personal API token for automation: acts with its owner's current role. Shown once at
 * creation; stored as a SHA-256 (the token is 256 random bits, so a slow hash adds nothing) with
 * a short visible prefix the owner recognises it by.
 */
export const apiTokens = pgTable(
  "api_tokens",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    userId: uuid("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    label: text("label").notNull(),
    /** Hex SHA-256 of the whole token. */
    tokenHash: text("token_hash").notNull().unique(),
    /** The token's first characters (`clp_AbCd1234`), enough to tell tokens apart. */
    prefix: text("prefix").notNull(),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    lastUsedAt: timestamp("last_used_at", { withTimezone: true }),
    revokedAt: timestamp("revoked_at", { withTimezone: true }),
  },
  (t) => [index("api_tokens_user_idx").on(t.userId)],
);

/**
 * The one-time token `npm start` prints while no user exists; `/setup` trades it for the first
 * admin. The partial unique index admits one used token ever: of two concurrent setups (even
 * with two different printed tokens) exactly one commits.
 */
export const setupTokens = pgTable(
  "setup_tokens",
  {
    id: bigserial("id", { mode: "number" }).primaryKey(),
    /** Hex SHA-256 of the printed token. */
    tokenHash: text("token_hash").notNull().unique(),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    usedAt: timestamp("used_at", { withTimezone: true }),
  },
  (t) => [
    uniqueIndex("setup_tokens_one_used_idx")
      .on(sql`(true)`)
      .where(sql`${t.usedAt} is not null`),
  ],
);

/**
 * Failed sign-ins per (lower-cased name, client address), in Postgres so the limit holds across
 * server processes and restarts. A success clears the pair's rows; old rows are pruned as new
 * ones arrive.
 */
export const loginFailures = pgTable(
  "login_failures",
  {
    id: bigserial("id", { mode: "number" }).primaryKey(),
    nameKey: text("name_key").notNull(),
    address: text("address").notNull(),
    at: timestamp("at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index("login_failures_key_idx").on(t.nameKey, t.address, t.at)],
);
