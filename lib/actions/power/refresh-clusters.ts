"use server";

import { getDb } from "@/lib/db/client";
import { requestClusterRefreshBy } from "@/lib/power/cluster-refresh/refresh-task";
import { ZRefreshClusters } from "@/lib/power/clusters/schemas";
import { action } from "../action";
import { powerFormInput } from "./power-form-input";

/**
 * Queues a refresh of every host's cluster membership (operators and admins; audited). The page
 * hears of the result on the live stream.
 */
export const refreshClustersAction = action(
  {
    name: "refresh clusters",
    role: "operator",
    schema: ZRefreshClusters,
    input: powerFormInput,
    errorKeys: "path",
  },
  async ({ actor }) => {
    await requestClusterRefreshBy(getDb(), actor);
    return {};
  },
);
