"use server";

import { getDb } from "@/lib/db/client";
import { restoreCluster, ZRestoreCluster } from "@/lib/power/operations/restore-cluster";
import { action } from "../action";
import { powerFormInput } from "./power-form-input";

/**
 * After power is back: re-arms the cluster's HA and clears its Ceph flags, each read back.
 * Admins only; audited. Answers what was restored and what could not be.
 */
export const restoreClusterAction = action(
  {
    name: "restore cluster",
    role: "admin",
    schema: ZRestoreCluster,
    input: powerFormInput,
    errorKeys: "path",
    revalidate: [["/power", "layout"]],
  },
  async ({ actor, input }) => ({ report: await restoreCluster(getDb(), input, actor) }),
);
