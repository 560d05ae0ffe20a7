import { CONSOLE_PRIVILEGES, type RequiredPrivilege } from "@/lib/proxmox/console-identity";

/**
 * The privileges a protected node's token needs for the features the console uses on it, each
 * with the path Proxmox checks and what it is for (the purposes onboarding grants them with).
 * A standalone node only needs to be shut down; a cluster member also takes part in the
 * cluster's preparation: HA disarm, stopping every guest, and Ceph flags on hyper-converged Ceph;
 * a member of a consolidating cluster migrates the guests off its node (mode migrate).
 */
export function requiredPowerPrivileges(
  node: string,
  features: { cluster: boolean; ceph: boolean; migrate?: boolean },
): RequiredPrivilege[] {
  const wanted: { privilege: string; path?: string; purpose?: string }[] = [
    { privilege: "Sys.PowerMgmt" },
  ];
  if (features.cluster) {
    wanted.push(
      { privilege: "Sys.Console" },
      { privilege: "VM.PowerMgmt" },
      {
        privilege: "VM.Audit",
        purpose: "power: list every guest of the cluster and read it back stopped",
      },
    );
    if (features.ceph) wanted.push({ privilege: "Sys.Modify" });
    if (features.migrate) wanted.push({ privilege: "VM.Migrate" });
  }
  return wanted.map(({ privilege, purpose }) => {
    const granted = CONSOLE_PRIVILEGES.find((p) => p.privilege === privilege)!;
    return {
      privilege,
      path: granted.path.replace("{node}", node),
      purpose: purpose ?? granted.purpose,
    };
  });
}

/** PBS: shutting it down needs Sys.PowerManagement on /system/status (only the Admin role has it). */
export const PBS_POWER_PRIVILEGE: RequiredPrivilege = {
  privilege: "Sys.PowerManagement",
  path: "/system/status",
  purpose: "power: shut the backup server down (POST /nodes/localhost/status)",
};
