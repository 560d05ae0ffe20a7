import { pgTable, uuid, text, integer, timestamp, unique, index } from "drizzle-orm/pg-core";

/** What is sold. A plan's sellable shape lives in its versions. */
export const plans = pgTable("plans", {
  id: uuid("id").primaryKey().defaultRandom(),
  slug: text("slug").notNull().unique(),
  name: text("name").notNull(),
  createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
});

/**
 * One sellable version of a plan, built from one golden template. Published versions whose sale
 * window has not ended decide which templates every active host must carry
 * (lib/catalog/required-template-vmids.ts, the only place that reads the window).
 */
export const planVersions = pgTable(
  "plan_versions",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    planId: uuid("plan_id")
      .notNull()
      .references(() => plans.id),
    version: integer("version").notNull(),
    templateVmid: integer("template_vmid").notNull(),
    cores: integer("cores").notNull(),
    memoryMib: integer("memory_mib").notNull(),
    diskGib: integer("disk_gib").notNull(),
    publishedAt: timestamp("published_at", { withTimezone: true }),
    saleStartsAt: timestamp("sale_starts_at", { withTimezone: true }),
    /** Null: on sale until further notice. */
    saleEndsAt: timestamp("sale_ends_at", { withTimezone: true }),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    unique("plan_versions_plan_version").on(t.planId, t.version),
    index("plan_versions_vmid_idx").on(t.templateVmid),
  ],
);
