import type { Database } from "@/lib/db/client";
import { refreshClusterGroups } from "@/lib/power/clusters/refresh-cluster-groups";
import { seedActiveLabHost } from "@/lib/power/clusters/test-helpers";
import { CONSOLE_PRIVILEGE_NAMES } from "@/lib/steps/host/create-api-token";
import type { LabCluster } from "@/lab";
import { addUps, protectHost } from "@/test/fixtures/power";

/**
 * Test fixture of the cluster sequence's and the cluster drill's integration tests: a lab
 * cluster's nodes as active hosts of the console (a token of their own holding `privs`, by
 * default exactly what onboarding grants), each protected by one new UPS, and the console's
 * discovery run so it knows them as one cluster.
 */
export async function protectLabCluster(
  db: Database,
  lab: LabCluster,
  options: {
    privs?: readonly string[];
    upsName?: string;
    /** Where the UPS is read (a lab UPS's NUT face); default a source nothing answers on. */
    upsSource?: Parameters<typeof addUps>[2];
  } = {},
): Promise<{ upsId: string; targets: Record<string, string> }> {
  const token = lab.addToken("console", [...(options.privs ?? CONSOLE_PRIVILEGE_NAMES)]);
  const upsId = options.upsSource
    ? await addUps(db, options.upsName ?? `ups-${lab.name}`, options.upsSource)
    : await addUps(db, ...(options.upsName === undefined ? [] : [options.upsName]));
  const targets: Record<string, string> = {};
  for (const node of lab.nodes) {
    const hostId = await seedActiveLabHost(db, {
      nodeName: node.name,
      port: node.api.port,
      certSha256: node.api.certSha256,
      token,
    });
    targets[node.name] = await protectHost(db, hostId, { feeds: [upsId] });
  }
  await refreshClusterGroups(db, { all: true });
  return { upsId, targets };
}
