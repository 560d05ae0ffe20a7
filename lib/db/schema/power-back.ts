import {
  bigserial,
  boolean,
  index,
  integer,
  pgEnum,
  pgTable,
  text,
  timestamp,
  unique,
  uuid,
} from "drizzle-orm/pg-core";
import { powerTargets } from "./power";
import { powerClusters } from "./power-clusters";
import { runs } from "./runs";

/**
 * running: the guest ran when the shutdown run listed it (it stops it, or would stop it).
 * unknown: the node's guests could not be listed (the row names the node, no guest): the way
 * back cannot say what ran there and says so instead of starting anything there.
 */
export const powerBackGuestState = pgEnum("power_back_guest_state", ["running", "unknown"]);

/**
 * What ran before (issue 30, item 3): per guest a shutdown run stopped or would stop, that it
 * was running, on which node, its startup order and up-delay, and whether HA managed it. Guests
 * that were stopped are never recorded, so the way back never starts one. Keyed by the outage
 * (`due_since`, as the shutdown calls name it) and the run that listed it.
 */
export const powerBackGuests = pgTable(
  "power_back_guests",
  {
    id: bigserial("id", { mode: "number" }).primaryKey(),
    /** The shutdown run that listed it. */
    runId: uuid("run_id")
      .notNull()
      .references(() => runs.id, { onDelete: "cascade" }),
    /** The outage: when the target(s) became due (the shutdown calls' `due_since`). */
    dueSince: timestamp("due_since", { withTimezone: true }).notNull(),
    /** A standalone target's guests: its target; a cluster's: null (the cluster names them). */
    targetId: uuid("target_id").references(() => powerTargets.id, { onDelete: "cascade" }),
    clusterId: uuid("cluster_id").references(() => powerClusters.id, { onDelete: "cascade" }),
    node: text("node").notNull(),
    state: powerBackGuestState("state").notNull(),
    /** null with state unknown. */
    vmid: integer("vmid"),
    /** qemu or lxc; null with state unknown. */
    type: text("type"),
    name: text("name"),
    /** From its config's `startup`: null when it has none (or it could not be read). */
    startupOrder: integer("startup_order"),
    upSeconds: integer("up_seconds"),
    /** HA managed it; null: could not tell. */
    haManaged: boolean("ha_managed"),
    /** Why the order, the up-delay or HA could not be read, if not. */
    problem: text("problem"),
    /** dry-run or armed: what the shutdown run was. */
    mode: text("mode").notNull(),
    recordedAt: timestamp("recorded_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    unique("power_back_guests_one_per_run").on(t.runId, t.node, t.vmid).nullsNotDistinct(),
    index("power_back_guests_outage").on(t.dueSince),
  ],
);
